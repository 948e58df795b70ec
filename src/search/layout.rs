//! Which indexes serve a search of a table, and what the direct walk needs
//! of it, read from its relcache entry (no catalog statement): the GIN
//! index on the attributes, the columns a search reads, the btree led by
//! `(organisation_id, id)` in their collations and text's own order, the
//! tenant-keys index made of the extension's own `alerts_keys`, and
//! whether the relation is a plain heap table the walk can read as it is
//! (`scan/` walks it). Read once
//! per relcache epoch (`indexes.rs`), after the table is locked, and
//! checked again on the opened relation ([`Layout::fits`]).

use pgrx::pg_sys::{self, AttrNumber, Oid};

use super::index_shape::IndexShape;

/// What the direct walk needs of a table, found from its relcache entry.
#[derive(Clone, Copy)]
pub struct Layout {
    /// The btree led by (organisation_id, id).
    pub(super) index: Oid,
    /// Whether its `id` column is `DESC` (then a forward scan reads newest
    /// first).
    pub(super) id_desc: bool,
    /// The bitmap's position among the index's columns, when it has it.
    pub(super) bitmap_in_index: Option<usize>,
    pub(super) cols: Columns,
    /// The GIN index on `alerts_keys(organisation_id, id,
    /// attribute_values)`, when the table has one.
    pub(super) keys_index: Option<Oid>,
    /// A GIN index on `attribute_values` that answers the filter's jsonpath
    /// (`@@`), when the table has one: the GIN rare path reads it in place.
    pub(super) gin_index: Option<Oid>,
    /// A btree led by `id` in its collation (a partition's primary key
    /// `(id, created_at)`), and whether `id` is `DESC` in it: its last
    /// entry bounds every id of the table, any tenant's.
    pub(super) id_index: Option<(Oid, bool)>,
}

impl Layout {
    /// Whether the open table and index still have this layout.
    ///
    /// # Safety
    /// Both are open; `index` is the layout's.
    pub(super) unsafe fn fits(&self, heap: pg_sys::Relation, index: pg_sys::Relation) -> bool {
        // SAFETY: as the caller's.
        unsafe {
            let form = &*(*index).rd_index;
            walkable(heap)
                && form.indrelid == (*heap).rd_id
                && columns((*heap).rd_att) == Some(self.cols)
                && IndexShape::of_relation(index).paginates(self.cols.leading())
        }
    }
}

/// The indexes of a table that `alerts_search` uses, read from its
/// relcache entry.
#[derive(Clone, Copy)]
pub struct Indexes {
    /// GIN on `attribute_values` (valid, non-partial).
    pub gin: bool,
    /// GIN on `alerts_keys(organisation_id, id, attribute_values)`.
    pub keys: bool,
    /// A btree led by `(organisation_id, id)` in text's own order (or the
    /// relation is not a table: a view is not checked).
    pub page: bool,
    /// What the direct walk of `scan/` reads, when the table has the
    /// layout it needs.
    pub direct: Option<Layout>,
}

/// Which indexes serve a search of `relid`: GIN on the attributes, GIN on
/// the tenant keys, a btree led by `(organisation_id, id)` ordered by
/// text's own operators (a `text_pattern_ops` index orders bytes, and
/// cannot serve `ORDER BY id`), and the direct walk's layout. Valid,
/// non-partial indexes only: a partitioned table's index is valid once
/// every partition has one. One pass over the relcache, which reads no
/// catalog statement (Citus hides its shards' `pg_class` rows from
/// statements of client sessions on a worker, not from the relcache).
///
/// # Safety
/// `relid` must be a valid relation, locked by the caller's transaction.
pub unsafe fn indexes(relid: Oid) -> Indexes {
    // SAFETY: relcache entries are valid while open; every array read is
    // bounded by the index's column count.
    unsafe {
        let rel = pg_sys::relation_open(relid, pg_sys::AccessShareLock as i32);
        let desc = (*rel).rd_att;
        let kind = (*(*rel).rd_rel).relkind as u8;
        let mut found = Indexes {
            gin: false,
            keys: false,
            page: kind != pg_sys::RELKIND_RELATION && kind != pg_sys::RELKIND_PARTITIONED_TABLE,
            direct: None,
        };
        let cols = columns(desc);
        let walk = walkable(rel);
        let named = |attno: AttrNumber, name: &str| {
            attno > 0 && attno as i32 <= (*desc).natts && {
                let a = crate::compat::attribute(desc, attno as i32);
                std::ffi::CStr::from_ptr(a.attname.data.as_ptr()).to_bytes() == name.as_bytes()
            }
        };
        let (mut keys_index, mut gin_index, mut id_index) = (None, None, None);
        for cell in crate::pg_list::cells(pg_sys::RelationGetIndexList(rel)) {
            let oid = cell.oid_value;
            let index = pg_sys::index_open(oid, pg_sys::AccessShareLock as i32);
            let form = &*(*index).rd_index;
            if form.indisvalid && pg_sys::RelationGetIndexPredicate(index).is_null() {
                let keys = form.indkey.values.as_slice(form.indnatts as usize);
                let am = (*(*index).rd_rel).relam;
                let two = form.indnkeyatts >= 2;
                found.gin |= am == pg_sys::GIN_AM_OID && named(keys[0], "attribute_values");
                found.page |= am == pg_sys::BTREE_AM_OID
                    && two
                    && named(keys[0], "organisation_id")
                    && named(keys[1], "id")
                    && (0..2).all(|k| *(*index).rd_opfamily.add(k) == pg_sys::TEXT_BTREE_FAM_OID);
                if let Some(cols) = cols {
                    if gin_index.is_none() && am == pg_sys::GIN_AM_OID && keys[0] == cols.attrs {
                        gin_index = answers_jsonpath(index).then_some(oid);
                    }
                    // keys hash the tenant's bytes: where the tenant's
                    // collation finds other bytes equal ('ACME' = 'acme'
                    // case-insensitively), a lookup would miss their rows
                    if is_keys_index(index, [cols.org, cols.id, cols.attrs])
                        && pg_sys::get_collation_isdeterministic(cols.org_collation)
                    {
                        keys_index = Some(oid);
                    }
                    let shape = IndexShape::of_relation(index);
                    if id_index.is_none() && shape.orders_ids((cols.id, cols.id_collation)) {
                        let desc = *(*index).rd_indoption as u32 & pg_sys::INDOPTION_DESC != 0;
                        id_index = Some((oid, desc));
                    }
                    // the btree whose layout carries the bitmap, if any
                    let candidate = walk
                        .then(|| walk_layout(index, &shape, oid, cols))
                        .flatten();
                    if let Some(candidate) = candidate.filter(|c| {
                        found.direct.is_none_or(|b| {
                            b.bitmap_in_index.is_none() && c.bitmap_in_index.is_some()
                        })
                    }) {
                        found.direct = Some(candidate);
                    }
                }
            }
            pg_sys::index_close(index, pg_sys::NoLock as i32);
        }
        pg_sys::relation_close(rel, pg_sys::NoLock as i32);
        found.keys = keys_index.is_some();
        found.direct = found.direct.map(|b| Layout {
            keys_index,
            gin_index,
            id_index,
            ..b
        });
        found
    }
}

/// The direct walk's layout through `index` (valid, non-partial, with
/// relation id `oid`, read as `shape`), when it is a btree led by the
/// tenant's and the id's columns (`cols`), both in text's own order.
///
/// # Safety
/// `index` is open.
unsafe fn walk_layout(
    index: pg_sys::Relation,
    shape: &IndexShape,
    oid: Oid,
    cols: Columns,
) -> Option<Layout> {
    // SAFETY: as the caller's; the key array is read within its length.
    unsafe {
        let form = &*(*index).rd_index;
        let keys = form.indkey.values.as_slice(form.indnatts as usize);
        shape.paginates(cols.leading()).then(|| Layout {
            index: oid,
            id_desc: *(*index).rd_indoption.add(1) as u32 & pg_sys::INDOPTION_DESC != 0,
            bitmap_in_index: keys.iter().position(|&k| k == cols.bitmap),
            cols,
            keys_index: None,
            gin_index: None,
            id_index: None,
        })
    }
}

/// The column named `name` of `desc`, when it is of one of `types`: its
/// number and collation.
///
/// # Safety
/// `desc` is a live descriptor.
unsafe fn column(
    desc: pg_sys::TupleDesc,
    name: &str,
    types: &[Oid],
) -> Option<(AttrNumber, Oid, (Oid, i32))> {
    // SAFETY: every attribute number read is in 1..=natts.
    unsafe {
        for attno in 1..=(*desc).natts {
            let a = crate::compat::attribute(desc, attno);
            if !a.attisdropped
                && std::ffi::CStr::from_ptr(a.attname.data.as_ptr()).to_bytes() == name.as_bytes()
            {
                return types.contains(&a.atttypid).then_some((
                    attno as AttrNumber,
                    a.attcollation,
                    (a.atttypid, a.atttypmod),
                ));
            }
        }
        None
    }
}

/// The columns a search reads, with the types it reads (text or varchar
/// `organisation_id` and `id`: one representation, compared by text's
/// operators; jsonb `attribute_values`, a bit or bit varying bitmap), and
/// the first two's collations: the walk's and the custom scan's.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Columns {
    pub org: AttrNumber,
    pub id: AttrNumber,
    pub attrs: AttrNumber,
    pub bitmap: AttrNumber,
    pub org_collation: Oid,
    pub id_collation: Oid,
    /// `id`'s type and type modifier (text, or varchar with or without a
    /// length): the custom scan's `ORDER BY id` names the column so.
    pub id_type: (Oid, i32),
}

impl Columns {
    /// The pagination index's leading columns, with their collations.
    pub fn leading(&self) -> [(AttrNumber, Oid); 2] {
        [(self.org, self.org_collation), (self.id, self.id_collation)]
    }

    /// Whether ids compare byte by byte (`C`, `POSIX`): then an id's bytes
    /// bound the weeks of the ids beside it (`alerts_core::keys::week_bound`).
    pub fn ids_bytewise(&self) -> bool {
        super::constraints::bytewise(self.id_collation)
    }
}

/// The types a search reads `organisation_id` and `id` as: one
/// representation, compared by text's operators.
pub const TEXT_TYPES: [Oid; 2] = [pg_sys::TEXTOID, pg_sys::VARCHAROID];

/// The search's columns of a relation, from its tuple descriptor; None
/// when one is missing or of another type.
///
/// # Safety
/// `desc` is a live descriptor.
pub unsafe fn columns(desc: pg_sys::TupleDesc) -> Option<Columns> {
    // SAFETY: as the caller's.
    unsafe {
        let org = column(desc, "organisation_id", &TEXT_TYPES)?;
        let id = column(desc, "id", &TEXT_TYPES)?;
        let (attrs, ..) = column(desc, "attribute_values", &[pg_sys::JSONBOID])?;
        let (bitmap, ..) = column(
            desc,
            "attribute_values_bitmap",
            &[pg_sys::BITOID, pg_sys::VARBITOID],
        )?;
        Some(Columns {
            org: org.0,
            id: id.0,
            attrs,
            bitmap,
            org_collation: org.1,
            id_collation: id.1,
            id_type: id.2,
        })
    }
}

/// Whether the relation is one the direct walk can read as the heap it
/// is: a plain table (not a view, not partitioned, no inheritance children,
/// whose rows a statement would read too) of the heap access method (the
/// walk fetches through the heap's own HOT-chain search).
///
/// # Safety
/// `rel` is open.
unsafe fn walkable(rel: pg_sys::Relation) -> bool {
    // SAFETY: as the caller's.
    unsafe { heap_table(&*(*rel).rd_rel) }
}

/// [`walkable`] from the relation's `pg_class` row (a relcache entry's, or
/// a syscache tuple's).
pub fn heap_table(form: &pg_sys::FormData_pg_class) -> bool {
    form.relkind == pg_sys::RELKIND_RELATION as std::ffi::c_char
        && form.relam == pg_sys::HEAP_TABLE_AM_OID
        && !form.relhassubclass
}

/// Whether GIN index `index`'s first column (a `jsonb` one) has jsonpath's
/// `@@` in its operator class (`jsonb_ops` and `jsonb_path_ops` both do).
///
/// # Safety
/// The index is open.
unsafe fn answers_jsonpath(index: pg_sys::Relation) -> bool {
    // SAFETY: as the caller's; a syscache lookup.
    unsafe {
        *(*index).rd_opcintype == pg_sys::JSONBOID
            && pg_sys::get_opfamily_member(
                *(*index).rd_opfamily,
                pg_sys::JSONBOID,
                pg_sys::JSONPATHOID,
                pg_sys::JsonbJsonpathPredicateStrategyNumber as i16,
            ) != pg_sys::InvalidOid
    }
}

/// Whether `index` is a valid, non-partial GIN index on the extension's
/// `alerts_keys(organisation_id, id, attribute_values)` of these columns.
unsafe fn is_keys_index(index: pg_sys::Relation, columns: [AttrNumber; 3]) -> bool {
    // SAFETY: the index is open; its expression list is read from its
    // relcache entry.
    unsafe {
        let form = &*(*index).rd_index;
        if (*(*index).rd_rel).relam != pg_sys::GIN_AM_OID
            || !form.indisvalid
            || form.indnatts != 1
            || *form.indkey.values.as_ptr() != 0
            || !pg_sys::RelationGetIndexPredicate(index).is_null()
        {
            return false;
        }
        let exprs = pg_sys::RelationGetIndexExpressions(index);
        let (1, Some(node)) = (
            crate::pg_list::len(exprs),
            crate::pg_list::nth::<pg_sys::Node>(exprs, 0),
        ) else {
            return false;
        };
        if (*node).type_ != pg_sys::NodeTag::T_FuncExpr {
            return false;
        }
        // The extension's own alerts_keys: a function of that name in
        // another schema computes other keys, and its index answers other
        // questions.
        let f = node as *mut pg_sys::FuncExpr;
        let name = pg_sys::get_func_name((*f).funcid);
        let ours = pg_sys::get_extension_oid(c"alerts".as_ptr(), true);
        if name.is_null()
            || std::ffi::CStr::from_ptr(name).to_bytes() != b"alerts_keys"
            || ours == pg_sys::InvalidOid
            || pg_sys::getExtensionOfObject(pg_sys::ProcedureRelationId, (*f).funcid) != ours
        {
            return false;
        }
        let args = (*f).args;
        crate::pg_list::len(args) == 3
            && crate::pg_list::ptrs::<pg_sys::Node>(args)
                .zip(columns)
                .all(|(mut a, column)| {
                    // a varchar column reaches the function as text
                    while (*a).type_ == pg_sys::NodeTag::T_RelabelType {
                        a = (*(a as *mut pg_sys::RelabelType)).arg.cast();
                    }
                    (*a).type_ == pg_sys::NodeTag::T_Var
                        && (*(a as *mut pg_sys::Var)).varattno == column
                })
    }
}

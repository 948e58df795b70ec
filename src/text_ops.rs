//! The text type's own comparison operators (text against text), by OID,
//! and what each becomes with its operands swapped: shared by the custom
//! scan's reading of a query's quals and the search's reading of a
//! partition's `CHECK` constraints.

/// `text = text`, `<`, `<=`, `>`, `>=`.
pub const TEXT_EQ: u32 = 98;
pub const TEXT_LT: u32 = 664;
pub const TEXT_LE: u32 = 665;
pub const TEXT_GT: u32 = 666;
pub const TEXT_GE: u32 = 667;

/// Text comparison `opno` with its operands swapped (`a < b` is `b > a`);
/// None for any other operator.
pub fn commuted(opno: u32) -> Option<u32> {
    match opno {
        TEXT_EQ => Some(TEXT_EQ),
        TEXT_LT => Some(TEXT_GT),
        TEXT_GT => Some(TEXT_LT),
        TEXT_LE => Some(TEXT_GE),
        TEXT_GE => Some(TEXT_LE),
        _ => None,
    }
}

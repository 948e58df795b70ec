package alertsbloom

import (
	"encoding/binary"
	"sort"
	"strings"

	"github.com/zeebo/xxh3"
)

const (
	// weekMs is the width of a tenant key's bucket: one week of ULID time.
	weekMs = 7 * 24 * 3600 * 1000
	// noWeek is the bucket of ids that do not start with an uppercase ULID time.
	noWeek = ^uint64(0)
)

// week is the bucket of an id: its first 10 characters read as a ULID time
// when they are all uppercase Crockford base32, else noWeek.
func week(id []byte) uint64 {
	if len(id) < 10 {
		return noWeek
	}
	var ms uint64
	for _, b := range id[:10] {
		d := strings.IndexByte(ulidAlphabet, b)
		if d < 0 {
			return noWeek
		}
		ms = ms*32 + uint64(d)
	}
	return ms / weekMs
}

// Keys is the tenant keys of a row, as the server's
// alerts_keys(organisation_id, id, attrs) computes them: each element of
// the attributes hashed with the tenant and the week of the row's ULID, as
// signed 64-bit integers, sorted and without duplicates. Store them in a
// bigint[] column with a GIN index to find a tenant's rare values without
// the extension (docs/managed-postgres.md). attrs is as for Bloom.
func Keys(organisationID, id string, attrs any) ([]int64, error) {
	tenant, err := stringBytes(organisationID)
	if err != nil {
		return nil, err
	}
	idBytes, err := stringBytes(id)
	if err != nil {
		return nil, err
	}
	els, err := elements(attrs)
	if err != nil {
		return nil, err
	}
	head := binary.BigEndian.AppendUint32(nil, uint32(len(tenant)))
	head = append(head, tenant...)
	head = binary.BigEndian.AppendUint64(head, week(idBytes))
	seen := make(map[int64]bool, len(els))
	out := make([]int64, 0, len(els))
	for _, el := range els {
		k := int64(xxh3.Hash(append(append([]byte(nil), head...), el...)))
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

package alertsbloom

import (
	"crypto/rand"
	"math/big"
	"time"
)

const (
	ulidAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	ulidMaxMs    = 1<<48 - 1
)

func ulidText(ms int64, random []byte) string {
	v := new(big.Int).Lsh(big.NewInt(ms), 80)
	v.Or(v, new(big.Int).SetBytes(random))
	out := make([]byte, 26)
	for i := 25; i >= 0; i-- {
		out[i] = ulidAlphabet[new(big.Int).And(v, big.NewInt(31)).Int64()]
		v.Rsh(v, 5)
	}
	return string(out)
}

// ULIDFloorMs is the smallest ULID of Unix millisecond ms:
// alerts_ulid_floor, the window's lower bound. Times before 1970 give all
// zeros.
func ULIDFloorMs(ms int64) (string, error) {
	if ms > ulidMaxMs {
		return "", errorf("the time is after the last time a ULID can hold (10889-08-02 05:31:50.655 UTC): pass an earlier one")
	}
	return ulidText(max(ms, 0), nil), nil
}

// ULIDFloor is the smallest ULID of the millisecond of t (ULIDFloorMs).
func ULIDFloor(t time.Time) (string, error) {
	return ULIDFloorMs(t.UnixMilli())
}

// ULID is a new ULID (48-bit milliseconds, 80 random bits) of the time t,
// as alerts_ulid(t).
func ULID(t time.Time) (string, error) {
	ms := t.UnixMilli()
	if ms < 0 || ms > ulidMaxMs {
		return "", errorf("a ULID holds times from 1970 to 10889-08-02")
	}
	random := make([]byte, 10)
	if _, err := rand.Read(random); err != nil {
		return "", err
	}
	return ulidText(ms, random), nil
}

// NewULID is a new ULID of now.
func NewULID() string {
	u, err := ULID(time.Now())
	if err != nil {
		panic(err) // now is between 1970 and 10889
	}
	return u
}

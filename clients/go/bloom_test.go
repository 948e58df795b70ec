package alertsbloom

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// the golden vectors the server computed (tests/vectors/v1.jsonl at the
// repository's root, or ALERTS_VECTORS)
func vectors(t *testing.T) []map[string]any {
	path := os.Getenv("ALERTS_VECTORS")
	if path == "" {
		path = filepath.Join("..", "..", "tests", "vectors", "v1.jsonl")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []map[string]any
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<24)
	for s.Scan() {
		d := json.NewDecoder(strings.NewReader(s.Text()))
		d.UseNumber()
		var r map[string]any
		if err := d.Decode(&r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows
}

func hexOf(bits string) string {
	n, _ := new(big.Int).SetString(bits, 2)
	b := make([]byte, len(bits)/8)
	n.FillBytes(b)
	return hex.EncodeToString(b)
}

func TestGoldenVectors(t *testing.T) {
	rows := vectors(t)
	if len(rows) < 200 {
		t.Fatalf("%d vectors", len(rows))
	}
	for _, r := range rows {
		in, _ := r["input"].(string)
		_, wantErr := r["error"]
		switch r["fn"] {
		case "bloom", "mask":
			bits, _ := r["bits"].(json.Number).Int64()
			fn := Bloom
			if r["fn"] == "mask" {
				fn = Mask
			}
			got, err := fn(in, int(bits))
			var e *Error
			if wantErr {
				if !errors.As(err, &e) {
					t.Errorf("%s(%.80s, %d): want an *Error, got %q, %v", r["fn"], in, bits, got, err)
				}
			} else if err != nil || hexOf(got) != r["output"] {
				t.Errorf("%s(%.80s, %d) = %s, %v; want %s", r["fn"], in, bits, hexOf(got), err, r["output"])
			}
		default:
			ms, _ := r["ms"].(json.Number).Int64()
			got, err := ULIDFloorMs(ms)
			if wantErr {
				if err == nil {
					t.Errorf("ulid_floor(%d): want an error, got %s", ms, got)
				}
			} else if err != nil || got != r["output"] {
				t.Errorf("ulid_floor(%d) = %s, %v; want %s", ms, got, err, r["output"])
			} else if g, _ := ULIDFloor(time.UnixMilli(ms)); g != got {
				t.Errorf("ULIDFloor(time.UnixMilli(%d)) = %s, want %s", ms, g, got)
			}
		}
	}
}

func musts(t *testing.T) func(string, error) string {
	return func(s string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func TestParsedEqualsText(t *testing.T) {
	must := musts(t)
	cases := []struct {
		parsed any
		text   string
	}{
		{map[string]any{"team": "t1", "feature": []any{"alerts", "billing"}, "sev": 2}, `{"team": "t1", "feature": ["alerts", "billing"], "sev": 2}`},
		{map[string]any{"n": 1.5}, `{"n": 1.50}`},
		{map[string]any{"n": 100}, `{"n": 1e2}`},
		{map[string]any{"n": math.Copysign(0, -1)}, `{"n": 0}`},
		{map[string]any{"n": uint64(12345678901234567890)}, `{"n": 12345678901234567890}`},
		{map[string]any{"n": Number("1e400")}, `{"n": 1e400}`},
		{map[string]any{"n": json.Number("-2.5e-3")}, `{"n": -0.0025}`},
		{map[string]any{"o": map[string]any{"b": 1, "a": []any{2, nil}}}, `{"o": {"a": [2, null], "b": 1}}`},
		{map[string]any{"s": "é\n\"x\"\u2028<>&"}, `{"s": "é\n\"x\"\u2028<>&"}`},
	}
	for _, c := range cases {
		for _, bits := range Widths {
			if a, b := must(Bloom(c.parsed, bits)), must(Bloom(c.text, bits)); a != b {
				t.Errorf("%s at %d: parsed %s, text %s", c.text, bits, a, b)
			}
		}
	}
	if must(Bloom([]byte(`{"a": 1}`), 512)) != must(Bloom(`{"a": 1}`, 512)) {
		t.Error("[]byte differs from string")
	}
	if must(Mask(map[string]any{"team": "t1"}, 512)) != must(Mask(`{"team": "t1"}`, 512)) {
		t.Error("mask: parsed differs from text")
	}
	// a repeated key keeps its last value, as jsonb does
	if must(Bloom(`{"a": 1, "a": 2}`, 512)) != must(Bloom(`{"a": 2}`, 512)) {
		t.Error("repeated key")
	}
	// a float64 cannot hold these digits; the text form keeps them
	if must(Bloom(`{"n": 12345678901234567890.5}`, 512)) == must(Bloom(map[string]any{"n": 12345678901234567890.5}, 512)) {
		t.Error("a float64 kept every digit?")
	}
}

func TestRefused(t *testing.T) {
	refused := []func() (string, error){
		func() (string, error) { return Bloom(map[string]any{"n": math.NaN()}, 512) },
		func() (string, error) { return Bloom(map[string]any{"n": math.Inf(1)}, 512) },
		func() (string, error) { return Bloom(`[]`, 512) },
		func() (string, error) { return Bloom(`"x"`, 512) },
		func() (string, error) { return Bloom(`null`, 512) },
		func() (string, error) { return Mask(map[string]any{"team": []any{"a", "b"}}, 512) },
		func() (string, error) { return Mask(map[string]any{"team": nil}, 512) },
		func() (string, error) { return Bloom(`{}`, 64) },
		func() (string, error) { return Bloom(`{bad`, 512) },
		func() (string, error) { return Bloom(`{"s": "\ud800"}`, 512) },
		func() (string, error) { return Bloom(`{"s": "\u0000"}`, 512) },
		func() (string, error) { return Bloom([]byte{'{', '"', 0xff, '"', ':', '1', '}'}, 512) },
	}
	for i, f := range refused {
		got, err := f()
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("case %d: want an *Error, got %q, %v", i, got, err)
		}
	}
	// the nesting limit, at each side of it, is in the golden vectors and
	// tests/shell/clients_diff.py
}

// alerts_keys(organisation_id, id, attrs) as the server computed them
var serverKeys = []struct {
	org, id, attrs string
	want           []int64
}{
	{"org1", "01JTGTJE40F5F8590CD58A54E9", `{"team":"t1","sev":[1,2,null]}`, []int64{-1386791580509716685, 1522092769654227239, 6757988607651709813}},
	{"org1", "01jtgtje40f5f8590cd58a54e9", `{"team":"t1","sev":[1,2,null]}`, []int64{-7262823970784910525, -5492375520806901456, 5173735072742916389}},
	{"\u00e9", "01JTGTJE40F5F8590CD58A54E9", `{"n":{"b":1,"a":[1.50]}}`, []int64{-3103350319466388079}},
	{"org1", "01JTGTJE40F5F8590CD58A54E9", `{}`, []int64{}},
}

func TestKeys(t *testing.T) {
	for _, c := range serverKeys {
		var parsed map[string]any
		if err := json.Unmarshal([]byte(c.attrs), &parsed); err != nil {
			t.Fatal(err)
		}
		for _, in := range []any{c.attrs, parsed} {
			got, err := Keys(c.org, c.id, in)
			if err != nil {
				t.Fatalf("Keys(%q, %q, %v): %v", c.org, c.id, in, err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("Keys(%q, %q, %v) = %v, want %v", c.org, c.id, in, got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("Keys(%q, %q, %v) = %v, want %v", c.org, c.id, in, got, c.want)
				}
			}
		}
	}
}

func TestULID(t *testing.T) {
	if FormatVersion != 1 {
		t.Fatal(FormatVersion)
	}
	at := time.Date(2026, 11, 26, 1, 2, 3, 456_000_000, time.UTC)
	u, err := ULID(at)
	if err != nil || len(u) != 26 {
		t.Fatal(u, err)
	}
	lo, _ := ULIDFloor(at)
	hi, _ := ULIDFloor(at.Add(time.Millisecond))
	if !(lo <= u && u < hi) {
		t.Errorf("%s not in [%s, %s)", u, lo, hi)
	}
	if v, _ := ULID(at); v == u {
		t.Error("two ULIDs alike")
	}
	if f, _ := ULIDFloor(time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)); f != strings.Repeat("0", 26) {
		t.Error(f)
	}
	if len(NewULID()) != 26 {
		t.Error("NewULID")
	}
}

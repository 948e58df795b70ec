// Command alertsbloom-lines reads one JSON case a line, {"kind": "bloom" or
// "mask", "text": JSON text}, and writes for each the JSON array of its
// bitmaps at 512, 256 and 128 bits, "ERROR" where the encoder refuses it;
// for {"kind": "keys", "org", "id", "text"}, the array of one string, the
// row's tenant keys joined by commas: the Go client's side of
// tests/shell/clients_diff.py.
package main

import (
	"bufio"
	"encoding/json"
	"log"
	"os"
	"strconv"
	"strings"

	"alertsbloom"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<28)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for in.Scan() {
		var c struct{ Kind, Text, Org, ID string }
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			log.Fatal(err)
		}
		if c.Kind == "keys" {
			s := "ERROR"
			if keys, err := alertsbloom.Keys(c.Org, c.ID, c.Text); err == nil {
				parts := make([]string, len(keys))
				for i, k := range keys {
					parts[i] = strconv.FormatInt(k, 10)
				}
				s = strings.Join(parts, ",")
			}
			if err := enc.Encode([]string{s}); err != nil {
				log.Fatal(err)
			}
			continue
		}
		fn := alertsbloom.Bloom
		if c.Kind == "mask" {
			fn = alertsbloom.Mask
		}
		row := make([]string, 0, 3)
		for _, bits := range alertsbloom.Widths {
			s, err := fn(c.Text, bits)
			if err != nil {
				s = "ERROR"
			}
			row = append(row, s)
		}
		if err := enc.Encode(row); err != nil {
			log.Fatal(err)
		}
	}
	if err := in.Err(); err != nil {
		log.Fatal(err)
	}
}

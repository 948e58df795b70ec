// Command alertsbloom-lines reads one JSON case a line, {"kind": "bloom" or
// "mask", "text": JSON text}, and writes for each the JSON array of its
// bitmaps at 512, 256 and 128 bits, "ERROR" where the encoder refuses it:
// the Go client's side of tests/shell/clients_diff.py.
package main

import (
	"bufio"
	"encoding/json"
	"log"
	"os"

	"alertsbloom"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<28)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for in.Scan() {
		var c struct{ Kind, Text string }
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			log.Fatal(err)
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

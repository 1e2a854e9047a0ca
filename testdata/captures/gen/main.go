// Command gen writes the hand-built fixture captures in testdata/captures
// (cm4-i340, routerpi, apu4) from the facts in each capture's README.md.
//
// The captures stand for hardware this machine does not have. Where a seed
// article shows real command output (ethtool of the APU4's enp4s0, its
// /proc/interrupts lines, ip link, lspci), that text is copied verbatim;
// everything else is rendered here in the exact format the kernel or the
// ethtool version of that box prints, and the counters of the timed samples
// advance at the rates the seed's measurements describe, so that they are
// internally consistent (monotonic, packets and bytes agreeing, 100 USER_HZ
// ticks per CPU per second).
//
// Run from the repository root:
//
//	go run ./testdata/captures/gen
//
// It rewrites the three capture directories completely and is
// deterministic: running it twice gives the same bytes.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	out := flag.String("out", "testdata/captures", "directory that holds the capture directories")
	flag.Parse()
	for _, b := range []*box{cm4(), routerPi(), apu4()} {
		dir := filepath.Join(*out, b.name)
		if err := b.write(dir); err != nil {
			fmt.Fprintf(os.Stderr, "gen: %s: %v\n", b.name, err)
			os.Exit(1)
		}
		fmt.Printf("wrote %s\n", dir)
	}
}

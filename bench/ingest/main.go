// Command ingest benchmarks how fast hccl_exporter reads CANN logs, against
// public tools doing the same counting:
//
//	go run ./bench/ingest gen -out DIR -size 100M   # write a tree (bench/gen/treegen)
//	go run ./bench/ingest read -root DIR/log        # the collector's ingest path, counts as JSON
//	go run ./bench/ingest run -exporter BIN -sizes 100M,1G [-rounds 3]
//
// run writes (or reuses) a tree per size, then times, in alternated rounds,
// the collector's ingest path (tail.Follower.Poll + logstate.State.Ingest
// until drained, this binary's read command), `hccl_exporter diagnose`,
// `grep -rcE` and `mtail --one_shot`, each under /usr/bin/time -v for wall
// time and peak RSS. It prints the counts of every tool side by side and
// exits 1 when they disagree with each other or with what the generator
// wrote; it prints the ratios against the targets of docs/benchmarks.md.
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = cmdGen(os.Args[2:])
	case "read":
		err = cmdRead(os.Args[2:])
	case "run":
		err = cmdRun(os.Args[2:])
	case "-h", "-help", "--help", "help":
		usage()
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ingest:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage:
  ingest gen -out DIR [-size 100M] [-seed 1]     write a CANN log tree (DIR/log) and DIR/manifest.json
  ingest read -root DIR                          read a tree through the collector's ingest path; print counts as JSON
  ingest run -exporter BIN [-sizes 100M,1G] [-rounds 3] [-work DIR] [-mtail-max 1G]
                                                 the benchmark: alternated timed runs, counts side by side, ratios`)
	os.Exit(2)
}

func cmdRead(args []string) error {
	root := ""
	if len(args) == 2 && args[0] == "-root" {
		root = args[1]
	}
	if root == "" {
		usage()
	}
	a, err := readTree(root)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(a)
}

package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"github.com/hccl-exporter/hccl_exporter/bench/gen/treegen"
	"github.com/hccl-exporter/hccl_exporter/bench/internal/probe"
)

// manifest is written beside a generated tree: the spec it was made from
// and what it holds. A tree whose manifest matches the wanted spec is reused.
type manifest struct {
	Version int            `json:"version"`
	Spec    treegen.Spec   `json:"spec"`
	Counts  treegen.Counts `json:"counts"`
}

func cmdGen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	out := fs.String("out", "", "output directory (the tree goes to DIR/log)")
	size := fs.String("size", "100M", "tree size")
	seed := fs.Uint64("seed", 1, "seed")
	_ = fs.Parse(args)
	if *out == "" {
		usage()
	}
	n, err := probe.ParseSize(*size)
	if err != nil {
		return err
	}
	spec := treegen.Default()
	spec.Bytes, spec.Seed = n, *seed
	m, reused, err := ensureTree(*out, spec)
	if err != nil {
		return err
	}
	verb := "wrote"
	if reused {
		verb = "reused"
	}
	fmt.Printf("%s %s: %d files, %d bytes, %d lines\n", verb, filepath.Join(*out, "log"), m.Counts.Files, m.Counts.Bytes, m.Counts.Lines)
	return nil
}

// ensureTree writes the tree of spec into dir/log unless dir/manifest.json
// already describes it.
func ensureTree(dir string, spec treegen.Spec) (manifest, bool, error) {
	mpath := filepath.Join(dir, "manifest.json")
	if b, err := os.ReadFile(mpath); err == nil {
		var m manifest
		if json.Unmarshal(b, &m) == nil && m.Version == treegen.Version && reflect.DeepEqual(m.Spec, spec) {
			return m, true, nil
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return manifest{}, false, err
	}
	c, err := treegen.Write(filepath.Join(dir, "log"), spec)
	if err != nil {
		return manifest{}, false, err
	}
	m := manifest{Version: treegen.Version, Spec: spec, Counts: c}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(mpath, b, 0o644); err != nil {
		return manifest{}, false, fmt.Errorf("write manifest: %w", err)
	}
	return m, false, nil
}

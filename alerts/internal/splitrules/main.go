// Command splitrules writes alerts/sharded/: hccl_exporter.rules.yml cut
// into the per-node groups (for every Prometheus shard) and the cross-node
// groups (for the one global ruler). The rules file stays the source of
// truth; `make deploy-manifests` runs this, and a test fails when the halves
// are out of date.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hccl-exporter/hccl_exporter/alerts"
)

func main() {
	dir := flag.String("dir", "alerts", "the alerts directory (rules file in, sharded/ out)")
	check := flag.Bool("check", false, "do not write; exit 1 if sharded/ is not up to date")
	flag.Parse()
	if err := run(*dir, *check); err != nil {
		fmt.Fprintf(os.Stderr, "splitrules: %v\n", err)
		os.Exit(1)
	}
}

func run(dir string, check bool) error {
	rules, err := os.ReadFile(filepath.Join(dir, "hccl_exporter.rules.yml"))
	if err != nil {
		return err
	}
	node, cluster, err := alerts.SplitRules(rules)
	if err != nil {
		return err
	}
	for name, want := range map[string][]byte{alerts.NodeRulesFile: node, alerts.ClusterRulesFile: cluster} {
		path := filepath.Join(dir, name)
		if check {
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, want) {
				return fmt.Errorf("%s is not up to date with the rules file; run `make deploy-manifests`", path)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, want, 0o644); err != nil {
			return err
		}
	}
	return nil
}

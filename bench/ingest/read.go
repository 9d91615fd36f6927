package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/tail"
)

// Answer is what one tool counted in a tree; -1 where the tool cannot tell.
type Answer struct {
	Lines   int64 `json:"lines"`
	Info    int64 `json:"info"`
	Warning int64 `json:"warning"`
	Error   int64 `json:"error"`
	HCCLEnv int64 `json:"hccl_env"`
	EI0011  int64 `json:"ei0011"`
	EI0006  int64 `json:"ei0006"`
}

func unknown() Answer { return Answer{-1, -1, -1, -1, -1, -1, -1} }

var envTag = []byte("[HCCL_ENV]")

// readTree is the collector's ingest path: the log follower and the state,
// one Poll after another until a Poll delivers nothing. The counts come from
// the metrics the state exports (hccl_exporter_log_lines_total, hccl_fault_events_total);
// [HCCL_ENV] lines, which the state turns into settings rather than count,
// are counted beside it on HCCL INFO lines.
func readTree(root string) (Answer, error) {
	f, err := tail.New(tail.Config{Roots: []string{root}, DisableNotify: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		return Answer{}, err
	}
	defer f.Close()
	st := logstate.NewState(logstate.Options{})
	var env int64
	var src logstate.Source
	handle := func(file *tail.File, line []byte) {
		src.Path = file.Path
		src.Kind = logstate.SourcePlog
		if file.Kind == tail.KindDevicePlog {
			src.Kind = logstate.SourceDevicePlog
		}
		st.Ingest(&src, line)
		if len(line) > 12 && line[1] == 'I' && bytes.HasPrefix(line, []byte("[INFO] HCCL(")) && bytes.Contains(line, envTag) {
			env++
		}
	}
	for {
		before := f.Stats().LinesRead
		if err := f.Poll(handle); err != nil {
			return Answer{}, err
		}
		if f.Stats().LinesRead == before {
			break
		}
	}
	a := answerFromState(st)
	a.Lines = int64(f.Stats().LinesRead)
	a.HCCLEnv = env
	return a, nil
}

// answerFromState reads the counts from the state's exported metrics.
func answerFromState(st *logstate.State) Answer {
	a := Answer{}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(st)
	mfs, err := reg.Gather()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gather:", err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := labels(m)
			v := int64(m.GetCounter().GetValue())
			switch mf.GetName() {
			case "hccl_exporter_log_lines_total":
				switch l["level"] {
				case "INFO":
					a.Info += v
				case "WARNING":
					a.Warning += v
				case "ERROR":
					a.Error += v
				}
			case "hccl_fault_events_total":
				if l["source"] != logstate.FaultSourcePlog {
					continue
				}
				switch l["code"] {
				case "EI0011":
					a.EI0011 += v
				case "EI0006":
					a.EI0006 += v
				}
			}
		}
	}
	return a
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

// newlineScan is the floor of any line reader: read every file of the tree
// and count its newlines.
func newlineScan(root string) (int64, error) {
	var n int64
	buf := make([]byte, 256<<10)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".log") {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		for {
			k, err := f.Read(buf)
			n += int64(bytes.Count(buf[:k], []byte{'\n'}))
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	})
	return n, err
}

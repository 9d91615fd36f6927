package main

import (
	"errors"
	"io"
	"slices"
	"testing"
)

// TestClosersCloseInReverse: what started last stops first (the collectors
// before the log follower's last checkpoint, that before the kubelet
// connection), every closer runs even when one fails, and the errors are
// joined.
func TestClosersCloseInReverse(t *testing.T) {
	var order []string
	closer := func(name string, err error) io.Closer {
		return closeFunc(func() error { order = append(order, name); return err })
	}
	boom := errors.New("checkpoint failed")
	cs := closers{closer("pods", nil), closer("cannlog", boom), closer("hccn", nil)}
	err := cs.Close()
	if want := []string{"hccn", "cannlog", "pods"}; !slices.Equal(order, want) {
		t.Errorf("closed %v, want %v", order, want)
	}
	if !errors.Is(err, boom) {
		t.Errorf("Close() = %v, want it to carry %v", err, boom)
	}
	if err := (closers{}).Close(); err != nil {
		t.Errorf("closing nothing: %v", err)
	}
}

// closeFunc makes a func an io.Closer.
type closeFunc func() error

func (f closeFunc) Close() error { return f() }

//go:build !linux

package tail

import (
	"errors"
	"log/slog"
)

// watcher is Linux-only (inotify); elsewhere the follower polls.
type watcher struct{}

func newWatcher(*slog.Logger) (*watcher, error) {
	return nil, errors.New("no inotify on this platform")
}

func (w *watcher) add(string)             {}
func (w *watcher) take() *notifyHint      { return &notifyHint{all: true} }
func (w *watcher) count() int             { return 0 }
func (w *watcher) close() error           { return nil }
func (w *watcher) watching(string) bool   { return false }
func (w *watcher) addFD(string, int) bool { return false }
func (w *watcher) fail(string, string)    {}
func (w *watcher) dropBelow(string)       {}
func (w *watcher) beginScan()             {}
func (w *watcher) endScan()               {}

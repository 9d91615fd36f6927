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

func (w *watcher) add(string)        {}
func (w *watcher) take() *notifyHint { return &notifyHint{all: true} }
func (w *watcher) count() int        { return 0 }
func (w *watcher) dropBelow(string)  {}
func (w *watcher) close() error      { return nil }

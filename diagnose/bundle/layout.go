package bundle

import (
	"sort"
	"strings"
)

// NodeAssigner maps the group keys of one input to node names, following
// the input's layout (see Layout).
type NodeAssigner struct {
	name   string // the input's own node name
	prefix string // the level where the tree branches into nodes
	multi  bool   // the directories at prefix are nodes
}

// NewNodeAssigner decides the layout of an input from the keys of its groups
// (a CANN group key is a directory plus "plog-<pid>", which sits in the
// tree like a file).
func NewNodeAssigner(name string, keys []string, layout Layout) NodeAssigner {
	a := NodeAssigner{name: name}
	switch layout {
	case LayoutNode:
		return a
	case LayoutNodes:
		a.multi = true
		return a
	}
	sort.Strings(keys)
	for {
		dirs, files, cannFile := levelEntries(keys, a.prefix)
		if len(files) == 0 && len(dirs) == 1 && !isCANNDir(dirs[0]) {
			a.prefix += dirs[0] + "/"
			continue
		}
		if len(dirs) < 2 || cannFile {
			return NodeAssigner{name: name}
		}
		for _, d := range dirs {
			if isCANNDir(d) {
				return NodeAssigner{name: name}
			}
		}
		a.multi = true
		return a
	}
}

// levelEntries lists the distinct directories and the files directly at
// prefix among keys, and whether one of those files is a CANN log group.
func levelEntries(keys []string, prefix string) (dirs, files []string, cannFile bool) {
	seen := map[string]bool{}
	for _, k := range keys {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		rest := k[len(prefix):]
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			d := rest[:i]
			if !seen[d] {
				seen[d] = true
				dirs = append(dirs, d)
			}
			continue
		}
		files = append(files, rest)
		if strings.HasPrefix(rest, "plog-") || strings.HasPrefix(rest, "device-") {
			cannFile = true
		}
	}
	return dirs, files, cannFile
}

// Node returns the node of a group key. Files beside the node directories
// belong to the input's own node.
func (a NodeAssigner) Node(key string) string {
	if !a.multi || !strings.HasPrefix(key, a.prefix) {
		return a.name
	}
	rest := key[len(a.prefix):]
	if i := strings.IndexByte(rest, '/'); i > 0 {
		return rest[:i]
	}
	return a.name
}

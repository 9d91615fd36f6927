package bundle

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// Layout says how the files of an input are assigned to nodes.
type Layout string

// Layouts.
const (
	// LayoutAuto descends through directories that are the only entry of
	// their parent (a wrapper such as the top directory of an archive);
	// where the tree branches into two or more directories, none of them
	// part of a CANN log tree (run, debug, security, plog, log, ascend,
	// device-*), and no CANN log lies beside them, each directory is a node
	// named after it. Otherwise the whole input is one node, named after
	// the input.
	LayoutAuto Layout = "auto"
	// LayoutNodes makes each first-level directory of an input a node.
	LayoutNodes Layout = "nodes"
	// LayoutNode makes each input one node.
	LayoutNode Layout = "node"
)

// InputError is a problem with an input as a whole (a missing path, a
// directory that cannot be listed, a file that is neither a directory, an
// archive nor a log): nothing is reported and the command exits 2.
type InputError struct {
	Path string
	Err  error
}

func (e *InputError) Error() string { return fmt.Sprintf("input %s: %v", e.Path, e.Err) }
func (e *InputError) Unwrap() error { return e.Err }

// Input is one PATH of the command line.
type Input struct {
	Path string
	Name string // node name when the input is one node
	Type string // directory, archive or file
	// Groups by key (a slash-separated path relative to the input).
	Groups map[string]*Group
	// Skipped counts the files not read.
	Skipped int
	Errs    []string
	ledger  fileLedger // what was read and skipped, and the tools' layouts
	zip     bool       // an archive in zip format
}

// Group is one rotation group (see fileClass) and the sink its lines went
// into.
type Group struct {
	Key   string
	Kind  Kind
	Files []File
	// Size is the bytes its files hold as listed; Lines and Bytes what
	// was read.
	Size  int64
	Lines int64
	Bytes int64
	Errs  []string
	Sink  Sink
}

// File is one file of a group.
type File struct {
	abs, rel string
	gzipped  bool
}

// skip counts a file the analysis does not read, with its reason.
func (in *Input) skip(rel, reason string) {
	in.Skipped++
	in.ledger.skip(rel, reason, "")
}

// skipUnread counts a regular file classify turned down: a collection
// tool's file (with the tool and what it holds) or not a log.
func (in *Input) skipUnread(rel string) {
	in.Skipped++
	if r, ok := knownSkip(rel); ok {
		in.ledger.skip(rel, r.what, r.tool)
		return
	}
	in.ledger.skip(rel, SkipNotLog, "")
}

func (in *Input) group(rel string, fc fileClass, opts *Options) *Group {
	in.ledger.readFile(rel, kindName(fc.kind))
	g := in.Groups[fc.group]
	if g == nil {
		g = &Group{Key: fc.group, Kind: fc.kind, Sink: opts.NewSink(fc.group, fc.kind)}
		in.Groups[fc.group] = g
	}
	return g
}

// archiveSuffixes are the archive names diagnose streams, longest first.
var archiveSuffixes = []string{".tar.gz", ".tgz", ".tar", ".zip"}

// zipMagic starts every zip file (a local file header): a bundle is read as
// zip by its first bytes, whatever its name.
var zipMagic = []byte("PK\x03\x04")

// isZip reports whether the file at p starts like a zip.
func isZip(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(zipMagic))
	n, _ := io.ReadFull(f, head)
	return n == len(zipMagic) && bytes.Equal(head, zipMagic)
}

func archiveSuffix(name string) string {
	for _, s := range archiveSuffixes {
		if strings.HasSuffix(name, s) && len(name) > len(s) {
			return s
		}
	}
	return ""
}

// openInputs checks every path before anything is read, so a typo costs no
// time; it lists directories.
func openInputs(paths []string) ([]*Input, error) {
	if len(paths) == 0 {
		return nil, &InputError{Path: "", Err: errors.New("no path given")}
	}
	ins := make([]*Input, 0, len(paths))
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, &InputError{Path: p, Err: err}
		}
		clean := filepath.Clean(p)
		base := filepath.Base(clean)
		if abs, err := filepath.Abs(clean); err == nil {
			base = filepath.Base(abs)
		}
		in := &Input{Path: p, Name: base, Groups: map[string]*Group{}}
		switch {
		case st.IsDir():
			in.Type = "directory"
		case st.Mode().IsRegular() && isZip(p):
			in.Type, in.zip = "archive", true
			in.Name = strings.TrimSuffix(base, filepath.Ext(base))
		case st.Mode().IsRegular() && archiveSuffix(base) != "":
			in.Type = "archive"
			in.Name = strings.TrimSuffix(base, archiveSuffix(base))
		case st.Mode().IsRegular():
			in.Type = "file"
		default:
			return nil, &InputError{Path: p, Err: errors.New("not a directory, an archive or a regular file")}
		}
		if in.Type != "archive" {
			f, err := os.Open(p)
			if err != nil {
				return nil, &InputError{Path: p, Err: err}
			}
			f.Close()
		}
		ins = append(ins, in)
	}
	return ins, nil
}

// list walks a directory input and sorts its files into groups. Files that
// are not logs, symlinks (kubelet's /var/log/containers links would count
// every line twice) and other non-regular files are skipped.
func (in *Input) list(opts *Options) error {
	switch in.Type {
	case "file":
		fc, ok := classify(filepath.Base(in.Path))
		if !ok {
			fc = fileClass{kind: KindScreen, group: filepath.Base(in.Path)}
		}
		g := in.group(fc.group, fc, opts)
		g.Files = append(g.Files, File{abs: in.Path, rel: filepath.Base(in.Path), gzipped: fc.gzipped})
		return nil
	case "directory":
	default:
		return nil
	}
	root := in.Path
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return &InputError{Path: in.Path, Err: err}
			}
			in.Errs = append(in.Errs, fmt.Sprintf("%s: %v", p, err))
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			in.skip(p, SkipNotRegular)
			return nil
		}
		rel = filepath.ToSlash(rel)
		if !d.Type().IsRegular() {
			in.skip(rel, SkipNotRegular)
			return nil
		}
		fc, ok := classify(rel)
		if !ok {
			in.skipUnread(rel)
			return nil
		}
		g := in.group(rel, fc, opts)
		g.Files = append(g.Files, File{abs: p, rel: rel, gzipped: fc.gzipped})
		if info, err := d.Info(); err == nil {
			g.Size += info.Size()
		}
		return nil
	})
}

// runJobs runs jobs on at most workers goroutines, in order of the slice;
// each goroutine owns one read buffer.
func runJobs(jobs []func(buf []byte), workers int) {
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(jobs))
	work := make(chan func([]byte))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, readBufferSize)
			for job := range work {
				job(buf)
			}
		}()
	}
	for _, job := range jobs {
		work <- job
	}
	close(work)
	wg.Wait()
}

// readJob reads the files of a group in name order. Groups are independent,
// so they run concurrently; the files of one group are read by one
// goroutine, in the order CANN wrote them.
func (g *Group) readJob(buf []byte) {
	sort.Slice(g.Files, func(i, j int) bool { return g.Files[i].rel < g.Files[j].rel })
	for _, f := range g.Files {
		g.readFile(f, buf)
	}
}

func (g *Group) readFile(f File, buf []byte) {
	fh, err := os.Open(f.abs)
	if err != nil {
		g.Errs = append(g.Errs, fmt.Sprintf("%s: %v", f.abs, err))
		return
	}
	defer fh.Close()
	var mtime time.Time
	if st, err := fh.Stat(); err == nil {
		mtime = st.ModTime()
	}
	if err := g.read(f.rel, fh, f.gzipped, mtime, buf); err != nil {
		g.Errs = append(g.Errs, fmt.Sprintf("%s: %v", f.abs, err))
	}
}

// read feeds one file's lines to the group's sink, and its modification
// time (zero where unknown) to a sink that takes it (FileTimeSink).
func (g *Group) read(rel string, r io.Reader, gzipped bool, mtime time.Time, buf []byte) error {
	if gzipped {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("gunzip: %w", err)
		}
		defer zr.Close()
		r = zr
	}
	g.Sink.StartFile(rel)
	if ft, ok := g.Sink.(FileTimeSink); ok && !mtime.IsZero() {
		ft.FileModTime(mtime)
	}
	st, err := scanLines(r, buf, g.Sink.Line)
	g.Sink.EndFile()
	g.Lines += st.lines
	g.Bytes += st.bytes
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	return nil
}

// readArchive streams a tar (optionally gzipped) archive: entries are read
// in archive order straight into their groups' states, nothing is written
// to disk. A corrupt or truncated archive stops the read; what was read
// stays in the report and the error is reported.
func (in *Input) readArchive(opts *Options, buf []byte) {
	if in.zip || archiveSuffix(in.Path) == ".zip" {
		in.readZip(opts, buf)
		return
	}
	f, err := os.Open(in.Path)
	if err != nil {
		in.Errs = append(in.Errs, fmt.Sprintf("%s: %v", in.Path, err))
		return
	}
	defer f.Close()
	var r io.Reader = f
	if archiveSuffix(in.Path) != ".tar" {
		zr, err := gzip.NewReader(f)
		if err != nil {
			in.Errs = append(in.Errs, fmt.Sprintf("%s: not a gzip archive: %v", in.Path, err))
			return
		}
		defer zr.Close()
		r = zr
	}
	if err := in.readTar(r, opts, buf); err != nil {
		in.Errs = append(in.Errs, fmt.Sprintf("%s: %v", in.Path, err))
	}
}

// readTar reads the entries of a tar stream.
func (in *Input) readTar(r io.Reader, opts *Options, buf []byte) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("corrupt archive: %w", err)
		}
		if h.Typeflag != tar.TypeReg { // the reader turns old TypeRegA entries into TypeReg
			if h.Typeflag != tar.TypeDir {
				in.skip(CleanArchivePath(h.Name), SkipNotRegular)
			}
			continue
		}
		rel, fc, ok := in.archiveEntry(h.Name)
		if !ok {
			continue
		}
		g := in.group(rel, fc, opts)
		g.Files = append(g.Files, File{rel: rel, gzipped: fc.gzipped})
		g.Size += h.Size
		if err := g.read(rel, tr, fc.gzipped, h.ModTime, buf); err != nil {
			if fc.gzipped && !errors.Is(err, io.ErrUnexpectedEOF) {
				// A broken inner .gz is that file's problem; the archive
				// itself goes on.
				g.Errs = append(g.Errs, fmt.Sprintf("%s: %s: %v", in.Path, rel, err))
				continue
			}
			return fmt.Errorf("corrupt archive at %s: %w", rel, err)
		}
	}
}

// readZip reads the entries of a zip archive with the protections of
// readTar: only regular entries are read (symlinks, directories and other
// modes are skipped, so nothing outside the archive is ever opened), names
// are cleaned (../ cannot climb: nothing is extracted anyway), and each
// entry is streamed through the same bounded line reader, so an entry that
// inflates to gigabytes costs time, not memory. Entries are read in the
// order of the central directory.
func (in *Input) readZip(opts *Options, buf []byte) {
	zr, err := zip.OpenReader(in.Path)
	if errors.Is(err, zip.ErrInsecurePath) && zr != nil {
		// Names with ../ or a leading /: cleaned below, nothing is
		// extracted (with GODEBUG=zipinsecurepath=0 the reader says so).
		err = nil
	}
	if err != nil {
		in.Errs = append(in.Errs, fmt.Sprintf("%s: not a readable zip archive: %v", in.Path, err))
		return
	}
	defer zr.Close()
	for _, zf := range zr.File {
		if !zf.Mode().IsRegular() {
			if !zf.Mode().IsDir() {
				in.skip(CleanArchivePath(zf.Name), SkipNotRegular)
			}
			continue
		}
		rel, fc, ok := in.archiveEntry(zf.Name)
		if !ok {
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			in.Errs = append(in.Errs, fmt.Sprintf("%s: %s: %v", in.Path, rel, err))
			continue
		}
		g := in.group(rel, fc, opts)
		g.Files = append(g.Files, File{rel: rel, gzipped: fc.gzipped})
		g.Size += int64(min(zf.UncompressedSize64, 1<<62))
		if err := g.read(rel, rc, fc.gzipped, zf.Modified, buf); err != nil {
			g.Errs = append(g.Errs, fmt.Sprintf("%s: %s: %v", in.Path, rel, err))
		}
		rc.Close()
	}
}

// archiveEntry is a regular archive entry's cleaned name and class, for
// tar and zip alike; an entry whose name cleans to nothing or that holds no
// log the analysis reads is counted as skipped.
func (in *Input) archiveEntry(name string) (string, fileClass, bool) {
	rel := CleanArchivePath(name)
	if rel == "" {
		in.skip(name, SkipNotLog)
		return "", fileClass{}, false
	}
	fc, ok := classify(rel)
	if !ok {
		in.skipUnread(rel)
	}
	return rel, fc, ok
}

// CleanArchivePath makes an archive entry name a clean relative path: no
// leading "/", "./" or "../" (nothing is extracted, but node names come
// from these paths).
func CleanArchivePath(name string) string {
	p := path.Clean("/" + strings.ReplaceAll(name, "\\", "/"))
	return strings.TrimPrefix(p, "/")
}

package exporter

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"sync"
)

// An answer is gzipped in its own goroutine while it is being written, at
// flate.BestSpeed rather than promhttp's default level: on the worst-case
// node's 500 KB exposition it takes a third of the time for a body a few KB
// larger. The stable families, most of the answer, are not compressed again
// on every scrape: a DEFLATE stream is a sequence of blocks, and blocks from
// a compressor that started afresh refer to nothing before them, so a
// family's blocks compressed once (ending byte-aligned, not final) can be
// copied into any later answer between the blocks of the rest. The gzip
// framing around them (RFC 1952: header, CRC-32 and size of the whole
// answer) is written here.

// gzipHeader is a member header with no name, time or extra fields; XFL 4
// says the fastest level was used, OS 255 unknown (as compress/gzip writes).
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255}

// flatePool keeps compressors between answers: a new one allocates about a
// megabyte.
var flatePool = sync.Pool{New: func() any {
	fw, _ := flate.NewWriter(nil, flate.BestSpeed)
	return fw
}}

// keptEncoding is a stable family's encoding in one format, and the same
// deflated, made the first time a gzipped answer needs it.
type keptEncoding struct {
	plain []byte

	once     sync.Once
	deflated []byte // blocks of a fresh compressor, sync-flushed, not final
}

func (k *keptEncoding) deflate() []byte {
	k.once.Do(func() {
		var b bytes.Buffer
		fw := flatePool.Get().(*flate.Writer)
		defer flatePool.Put(fw)
		fw.Reset(&b)
		// Writes to a bytes.Buffer do not fail.
		_, _ = fw.Write(k.plain)
		_ = fw.Flush()
		k.deflated = b.Bytes()
	})
	return k.deflated
}

// gzipSegment is how much of the answer is handed to the compressor at a
// time: small enough that little is left to compress once encoding ends.
const gzipSegment = 32 << 10

// gzipItem is a part of the answer for the compressor: bytes to compress, or
// a kept encoding whose deflated form is copied.
type gzipItem struct {
	plain []byte
	kept  *keptEncoding
}

// gzipStream compresses an answer in its own goroutine while it is written.
type gzipStream struct {
	sent  int           // bytes of the answer handed to the compressor
	items chan gzipItem // parts of the answer, in order
	done  chan error    // the compressor's result, once items is closed
	out   *bytes.Buffer // the compressed answer
}

func startGzip(sizeHint int) *gzipStream {
	z := &gzipStream{items: make(chan gzipItem, 64), done: make(chan error, 1), out: &bytes.Buffer{}}
	z.out.Grow(sizeHint)
	go func() {
		z.out.Write(gzipHeader)
		fw := flatePool.Get().(*flate.Writer)
		defer flatePool.Put(fw)
		fw.Reset(z.out)
		var (
			err     error
			crc     uint32
			size    uint32 // modulo 2^32, as the trailer wants it
			pending bool   // fw holds blocks not flushed yet
		)
		for it := range z.items {
			if err != nil {
				continue
			}
			crc = crc32.Update(crc, crc32.IEEETable, it.plain)
			size += uint32(len(it.plain))
			if it.kept == nil {
				_, err = fw.Write(it.plain)
				pending = true
				continue
			}
			if pending {
				err = fw.Flush() // byte-aligned, so the kept blocks can follow
				pending = false
			}
			z.out.Write(it.kept.deflate())
			// What comes next must not refer back into the kept
			// blocks' data: start afresh.
			fw.Reset(z.out)
		}
		if err == nil {
			err = fw.Close() // the final block
		}
		z.out.Write(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, crc), size))
		z.done <- err
	}()
	return z
}

// feed hands the compressor what was written since the last hand-over, once
// there is a segment's worth of it or when final. The answer is only
// appended to: the part handed over is never written again, even when the
// buffer grows into a new array (the compressor keeps reading the old one).
func (z *gzipStream) feed(b []byte, final bool) {
	if len(b)-z.sent >= gzipSegment || final && len(b) > z.sent {
		z.items <- gzipItem{plain: b[z.sent:len(b):len(b)]}
		z.sent = len(b)
	}
}

// feedKept hands the compressor the rest of b before k, which b ends with,
// and then k.
func (z *gzipStream) feedKept(b []byte, k *keptEncoding) {
	if before := len(b) - len(k.plain); before > z.sent {
		z.items <- gzipItem{plain: b[z.sent:before:before]}
	}
	z.items <- gzipItem{plain: k.plain, kept: k}
	z.sent = len(b)
}

// finish compresses the rest of b and returns the compressed answer.
func (z *gzipStream) finish(b []byte) (*bytes.Buffer, error) {
	z.feed(b, true)
	close(z.items)
	return z.out, <-z.done
}

package replica

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Wire format of one message (one UDP packet), version 1:
//
//	magic "SR", version 1, kind (1 load, 2 prefix)
//	cluster: uvarint length + bytes; sender: uvarint length + bytes
//	entries until the end of the packet:
//	  load:   pod address (uvarint length + bytes), requests, those waiting for their first token,
//	          and their prompt tokens (three uvarints)
//	  prefix: base model (uvarint length + bytes), pod address (uvarint length + bytes),
//	          block count (uvarint), that many 8-byte little-endian block hashes
//
// Every message is self-contained, so a lost packet loses only its own entries.

const (
	magic0, magic1 = 'S', 'R'
	wireVersion    = 1

	kindLoad   = 1
	kindPrefix = 2

	// maxName bounds the cluster, sender, model and address strings.
	maxName = 255
	// maxCount bounds a load entry's requests and tokens (far above any pod's).
	maxCount = 1 << 40
	// minPacketBytes and maxPacketBytes bound Config.PacketBytes: a header with the longest names
	// and one entry must fit, and UDP cannot carry more than 64 KiB.
	minPacketBytes = 1024
	maxPacketBytes = 60 << 10
	// maxHeader is the largest header (magic, version, kind, two names).
	maxHeader = 4 + 2*(binary.MaxVarintLen16+maxName)
)

// errMalformed reports a message that does not decode.
var errMalformed = errors.New("replica: malformed message")

// header is a message's envelope.
type header struct {
	kind    byte
	cluster string
	sender  string
}

// loadEntry is one pod's figures in a load report.
type loadEntry struct {
	addr string
	load framework.InFlightLoad
}

// prefixRoute is one routed prompt: its base model, the pod it went to and its block hashes.
type prefixRoute struct {
	model, addr string
	hashes      []uint64
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendHeader(b []byte, h header) []byte {
	b = append(b, magic0, magic1, wireVersion, h.kind)
	b = appendString(b, h.cluster)
	return appendString(b, h.sender)
}

func appendLoad(b []byte, e loadEntry) []byte {
	b = appendString(b, e.addr)
	b = binary.AppendUvarint(b, uint64(max(0, e.load.Requests)))
	b = binary.AppendUvarint(b, uint64(max(0, e.load.Prefilling)))
	return binary.AppendUvarint(b, uint64(max(0, e.load.PrefillTokens)))
}

func appendPrefix(b []byte, r prefixRoute) []byte {
	b = appendString(b, r.model)
	b = appendString(b, r.addr)
	b = binary.AppendUvarint(b, uint64(len(r.hashes)))
	for _, h := range r.hashes {
		b = binary.LittleEndian.AppendUint64(b, h)
	}
	return b
}

// prefixSize is appendPrefix's length for r with n hashes.
func prefixSize(model, addr string, n int) int {
	return 3*binary.MaxVarintLen16 + len(model) + len(addr) + 8*n
}

// decoder reads one message. Strings are copied out of the buffer, which the caller may reuse.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errMalformed, what)
	}
}

func (d *decoder) uvarint(what string, limit uint64) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || v > limit {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str(what string) string {
	n := d.uvarint(what, maxName)
	if d.err != nil {
		return ""
	}
	if uint64(len(d.b)) < n {
		d.fail(what)
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// decodeHeader reads the envelope and returns the decoder positioned at the first entry.
func decodeHeader(b []byte) (header, *decoder, error) {
	if len(b) < 4 || b[0] != magic0 || b[1] != magic1 {
		return header{}, nil, fmt.Errorf("%w: bad magic", errMalformed)
	}
	if b[2] != wireVersion {
		return header{}, nil, fmt.Errorf("%w: version %d", errMalformed, b[2])
	}
	h := header{kind: b[3]}
	if h.kind != kindLoad && h.kind != kindPrefix {
		return header{}, nil, fmt.Errorf("%w: kind %d", errMalformed, h.kind)
	}
	d := &decoder{b: b[4:]}
	h.cluster, h.sender = d.str("cluster"), d.str("sender")
	if d.err == nil && (h.cluster == "" || h.sender == "") {
		d.fail("empty cluster or sender")
	}
	return h, d, d.err
}

// decodeLoad reads every load entry left in d, calling f for each; it stops at the first
// malformed one and returns its error (entries before it have been delivered).
func decodeLoad(d *decoder, f func(loadEntry)) error {
	for len(d.b) > 0 && d.err == nil {
		e := loadEntry{addr: d.str("address")}
		e.load.Requests = int64(d.uvarint("requests", maxCount))
		e.load.Prefilling = int64(d.uvarint("prefilling", maxCount))
		e.load.PrefillTokens = int64(d.uvarint("prefill tokens", maxCount))
		if d.err == nil && e.addr == "" {
			d.fail("empty address")
		}
		if d.err == nil {
			f(e)
		}
	}
	return d.err
}

// decodePrefix reads every prefix route left in d, calling f for each (r.hashes aliases a buffer
// reused for the next route); it stops at the first malformed one.
func decodePrefix(d *decoder, f func(prefixRoute)) error {
	var hashes []uint64
	for len(d.b) > 0 && d.err == nil {
		r := prefixRoute{model: d.str("model"), addr: d.str("address")}
		n := d.uvarint("block count", uint64(len(d.b)/8))
		if d.err == nil && (r.model == "" || r.addr == "" || n == 0) {
			d.fail("empty route")
		}
		if d.err != nil {
			break
		}
		hashes = hashes[:0]
		for range n {
			hashes = append(hashes, binary.LittleEndian.Uint64(d.b))
			d.b = d.b[8:]
		}
		r.hashes = hashes
		f(r)
	}
	return d.err
}

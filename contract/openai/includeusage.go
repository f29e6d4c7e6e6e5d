package openai

import "bytes"

// optsSpan is where the last "stream_options" member's value is in the parsed data.
type optsSpan struct {
	kind       optsKind
	start, end int  // the value: data[start:end]
	members    bool // an object with at least one member
	// usageStart and usageEnd bound the value of the object's last "include_usage" (usageEnd 0:
	// none).
	usageStart, usageEnd int
}

type optsKind uint8

const (
	optsAbsent optsKind = iota
	optsNull
	optsObject
)

// MaxIncludeUsageGrowth is the most AppendIncludeUsage adds to a body's length.
const MaxIncludeUsageGrowth = len(`,"stream_options":{"include_usage":true}`)

// NeedsUsage reports whether the parsed body streams its answer without asking for the usage
// chunk (stream true, stream_options.include_usage absent, false or null).
func (b *Body) NeedsUsage() bool { return b.Stream && !b.IncludeUsage }

// AppendIncludeUsage appends to dst the body data, which Parse read into b, asking for the usage
// chunk: stream_options.include_usage set to true, every other byte as sent. The last
// include_usage of the last stream_options (the one every JSON reader that keeps the last
// duplicate takes) has its value replaced by true; a stream_options object without one gets
// "include_usage":true as its last member; a null stream_options becomes
// {"include_usage":true}; without stream_options, "stream_options":{"include_usage":true} is
// added as the body's last member. A body that needs no change (NeedsUsage false) is appended
// as it is. It adds at most MaxIncludeUsageGrowth bytes.
func (b *Body) AppendIncludeUsage(dst, data []byte) []byte {
	if !b.NeedsUsage() {
		return append(dst, data...)
	}
	o := b.opts
	switch {
	case o.kind == optsObject && o.usageEnd > 0:
		return splice(dst, data, o.usageStart, o.usageEnd, `true`)
	case o.kind == optsObject && o.members:
		return splice(dst, data, o.end-1, o.end-1, `,"include_usage":true`)
	case o.kind == optsObject:
		return splice(dst, data, o.end-1, o.end-1, `"include_usage":true`)
	case o.kind == optsNull:
		return splice(dst, data, o.start, o.end, `{"include_usage":true}`)
	}
	// The top-level object has members (Parse found a model): add one before its closing brace.
	end := len(bytes.TrimRight(data, " \t\r\n")) - 1
	return splice(dst, data, end, end, `,"stream_options":{"include_usage":true}`)
}

// splice appends to dst data with data[from:to] replaced by ins.
func splice(dst, data []byte, from, to int, ins string) []byte {
	dst = append(dst, data[:from]...)
	dst = append(dst, ins...)
	return append(dst, data[to:]...)
}

// IsUsageChunk reports whether one SSE event's data is the usage-only chunk that a completions
// or chat completions stream asked for with include_usage ends with: a JSON object with a
// non-null "usage" and "choices" empty or absent. A chunk that carries choices too (an engine
// that reports usage on its last token) is not one.
func IsUsageChunk(data []byte) bool {
	s := scanner{data: data}
	if s.ws() != '{' {
		return false
	}
	usage, choices := false, false
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "usage":
			usage = s.ws() == '{'
		case "choices":
			if s.ws() == '[' {
				return s.array(func() error { choices = true; return s.skip(2) })
			}
		}
		return s.skip(1)
	})
	return err == nil && s.end() == nil && usage && !choices
}

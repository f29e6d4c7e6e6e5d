package openai

import (
	"bytes"
	"testing"
)

// naivePlain is the byte-at-a-time reference for scanner.plain.
func naivePlain(d []byte, pos int) int {
	for ; pos < len(d); pos++ {
		if c := d[pos]; c == '"' || c == '\\' || c < 0x20 {
			break
		}
	}
	return pos
}

func TestPlainFindsEverySpecialByte(t *testing.T) {
	// Every byte value at every offset of a word, after plain text that ends in bytes which
	// provoke borrows (0x00-0x01 and 0x80+), and with a second special byte behind it.
	fillers := []byte{'a', 0x7f, 0x80, 0xff, 0x21, 0x5d}
	for c := range 256 {
		for off := range 17 {
			for _, f := range fillers {
				d := append(bytes.Repeat([]byte{f}, off), byte(c), '"', 0x01)
				for start := range min(off+1, 9) {
					s := scanner{data: d, pos: start}
					s.plain()
					if want := naivePlain(d, start); s.pos != want {
						t.Fatalf("byte %#x at %d after %#x from %d: plain stops at %d, want %d", c, off, f, start, s.pos, want)
					}
				}
			}
		}
	}
}

func FuzzPlain(f *testing.F) {
	f.Add([]byte("hello \"world\" \\n \x01 é"), 0)
	f.Add(bytes.Repeat([]byte{0x80, 0x21}, 20), 3)
	f.Fuzz(func(t *testing.T, d []byte, start int) {
		if start < 0 || start > len(d) {
			return
		}
		s := scanner{data: d, pos: start}
		s.plain()
		if want := naivePlain(d, start); s.pos != want {
			t.Fatalf("plain(%q, %d) = %d, want %d", d, start, s.pos, want)
		}
	})
}

func TestSkipStrMatchesStr(t *testing.T) {
	tests := []string{`"abc"`, `"a\"b"`, `"\u00e9\ud83d\ude00"`, `"\q"`, "\"a\x01\"", `"abc`, `"\u12"`, `"\`}
	for _, in := range tests {
		t.Run(in, func(t *testing.T) {
			s1, s2 := scanner{data: []byte(in)}, scanner{data: []byte(in)}
			_, err1 := s1.str(nil)
			err2 := s2.skipStr()
			if (err1 == nil) != (err2 == nil) || (err1 == nil && s1.pos != s2.pos) {
				t.Fatalf("str: pos %d err %v; skipStr: pos %d err %v", s1.pos, err1, s2.pos, err2)
			}
		})
	}
}

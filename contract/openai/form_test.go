package openai_test

import (
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/openai"
)

// formPart is one part of a test body: a field, or a file when file is set.
type formPart struct {
	name, value, file string
}

// formBody builds a multipart/form-data body of parts; it returns the body and its Content-Type.
func formBody(t testing.TB, parts ...formPart) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, p := range parts {
		var err error
		var pw io.Writer
		if p.file != "" {
			pw, err = w.CreateFormFile(p.name, p.file)
		} else {
			pw, err = w.CreateFormField(p.name)
		}
		if err == nil {
			_, err = io.WriteString(pw, p.value)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), w.FormDataContentType()
}

// readAll reads a form's whole body through Open.
func readAll(t *testing.T, f *openai.Form) ([]byte, error) {
	t.Helper()
	r, ok := f.Open()
	if !ok {
		t.Fatal("Open refused a fresh form")
	}
	return io.ReadAll(r)
}

func TestReadForm(t *testing.T) {
	audio := strings.Repeat("RIFF-audio-bytes-", 10_000) // 170 KB
	tests := []struct {
		name      string
		parts     []formPart
		ctype     string // overrides the body's Content-Type
		raw       string // a raw body instead of parts
		limit     int64
		wantModel string
		wantErr   error // from ReadForm or, with restErr, from the rest
		restErr   bool
		wantParam string
		maxHead   int // the head holds at most this many bytes (0: no check)
	}{
		{name: "model first", parts: []formPart{{name: "model", value: "whisper-1"},
			{name: "file", value: audio, file: "a.wav"}}, wantModel: "whisper-1", maxHead: openai.FormReadAhead + 1000},
		{name: "model after file", parts: []formPart{{name: "file", value: audio, file: "a.wav"},
			{name: "model", value: "whisper-1"}, {name: "language", value: "en"}}, wantModel: "whisper-1"},
		{name: "short body", parts: []formPart{{name: "model", value: "m"}, {name: "file", value: "x", file: "a"}},
			wantModel: "m"},
		{name: "duplicate model after file", parts: []formPart{{name: "model", value: "cheap"},
			{name: "file", value: audio, file: "a.wav"}, {name: "model", value: "eu-only"}},
			wantErr: openai.ErrAmbiguousKey, restErr: true, wantParam: "model"},
		{name: "duplicate model at once", parts: []formPart{{name: "model", value: "a"}, {name: "model", value: "b"}},
			wantErr: openai.ErrAmbiguousKey, wantParam: "model"},
		{name: "model in another case", parts: []formPart{{name: "Model", value: "a"}, {name: "model", value: "b"}},
			wantErr: openai.ErrAmbiguousKey, wantParam: "model"},
		{name: "no model", parts: []formPart{{name: "file", value: "x", file: "a.wav"}},
			wantErr: openai.ErrMissingModel, wantParam: "model"},
		{name: "empty model", parts: []formPart{{name: "model", value: ""}}, wantErr: openai.ErrMissingModel},
		{name: "model as a file", parts: []formPart{{name: "model", value: "m", file: "m.txt"}}, wantErr: openai.ErrForm},
		{name: "model with a newline", parts: []formPart{{name: "model", value: "a\nb"}}, wantErr: openai.ErrForm},
		{name: "model too long", parts: []formPart{{name: "model", value: strings.Repeat("m", 2000)}},
			wantErr: openai.ErrForm},
		{name: "over the limit", parts: []formPart{{name: "file", value: audio, file: "a.wav"},
			{name: "model", value: "m"}}, limit: 64 << 10, wantErr: body.ErrTooLarge},
		{name: "over the limit after the model", parts: []formPart{{name: "model", value: "m"},
			{name: "file", value: audio, file: "a.wav"}}, limit: 64 << 10, wantErr: body.ErrTooLarge, restErr: true},
		{name: "not multipart", raw: `{"model":"m"}`, ctype: "application/json", wantErr: openai.ErrForm},
		{name: "no boundary", raw: "x", ctype: "multipart/form-data", wantErr: openai.ErrForm},
		{name: "no closing boundary", raw: "--B\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nm\r\n--B\r\n" +
			"Content-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nabc", ctype: "multipart/form-data; boundary=B",
			wantErr: openai.ErrForm},
		{name: "preamble and padding", raw: "preamble\r\n--B  \r\nContent-Disposition: form-data; name=\"model\"\r\n\r\n" +
			"m1\r\n--B--\r\nepilogue", ctype: "multipart/form-data; boundary=B", wantModel: "m1"},
		{name: "malformed disposition", raw: "--B\r\nContent-Disposition: form-data; name=\"model\r\n\r\nm\r\n--B--\r\n",
			ctype: "multipart/form-data; boundary=B", wantErr: openai.ErrForm},
		{name: "encoded model", raw: "--B\r\nContent-Disposition: form-data; name=\"model\"\r\n" +
			"Content-Transfer-Encoding: quoted-printable\r\n\r\nm=3D\r\n--B--\r\n",
			ctype: "multipart/form-data; boundary=B", wantErr: openai.ErrForm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, ctype := []byte(tt.raw), tt.ctype
			if tt.parts != nil {
				data, ctype = formBody(t, tt.parts...)
			}
			limit := tt.limit
			if limit == 0 {
				limit = 32 << 20
			}
			budget := body.NewBudget(1 << 30)
			// The client sends the body in small pieces, as a network would.
			src := &chunkReader{data: data, n: 1000}
			f, err := openai.ReadForm(src, ctype, body.Options{Limit: limit, Budget: budget})
			if err == nil {
				if budget.InUse() > limit+1 {
					t.Errorf("head reserves %d bytes, over the limit %d", budget.InUse(), limit)
				}
				if tt.maxHead > 0 && len(f.Head()) > tt.maxHead {
					t.Errorf("head holds %d bytes, want at most %d", len(f.Head()), tt.maxHead)
				}
				var got []byte
				got, err = readAll(t, f)
				if err == nil && !bytes.Equal(got, data) {
					t.Errorf("the body sent differs from the body received (%d bytes, want %d)", len(got), len(data))
				}
				if err != nil && !errors.Is(f.Err(), err) {
					t.Errorf("Err() = %v, want the rest's error %v", f.Err(), err)
				}
				f.Release()
			} else if tt.restErr {
				t.Fatalf("ReadForm: %v; want the error from the rest of the body", err)
			}
			if budget.InUse() != 0 {
				t.Errorf("%d bytes of the budget still in use after Release", budget.InUse())
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				var fe *openai.FormError
				if tt.wantParam != "" && (!errors.As(err, &fe) || fe.Param != tt.wantParam) {
					t.Errorf("error %v does not name param %q", err, tt.wantParam)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Model != tt.wantModel {
				t.Errorf("model %q, want %q", f.Model, tt.wantModel)
			}
		})
	}
}

// TestReadFormDeclaredTooLarge: a body declaring more than the limit is refused before a byte
// is read or reserved.
func TestReadFormDeclaredTooLarge(t *testing.T) {
	data, ctype := formBody(t, formPart{name: "model", value: "m"})
	budget := body.NewBudget(1 << 20)
	src := &chunkReader{data: data, n: 10}
	_, err := openai.ReadForm(src, ctype, body.Options{Limit: 1 << 10, Declared: 1 << 20, Budget: budget})
	if !errors.Is(err, body.ErrTooLarge) {
		t.Fatalf("error %v, want ErrTooLarge", err)
	}
	if src.off != 0 || budget.InUse() != 0 {
		t.Errorf("read %d bytes and reserved %d before refusing", src.off, budget.InUse())
	}
}

// TestReadFormStreamsOnce: the rest of a streamed body can be sent by one attempt only; a short
// body that came whole can be sent again.
func TestReadFormStreamsOnce(t *testing.T) {
	data, ctype := formBody(t, formPart{name: "model", value: "m"},
		formPart{name: "file", value: strings.Repeat("a", 100_000), file: "a.wav"})
	f, err := openai.ReadForm(&chunkReader{data: data, n: 4096}, ctype, body.Options{Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Release()
	if f.Complete() {
		t.Fatal("a 100 KB body read in 4 KB pieces came whole with its head")
	}
	r, ok := f.Open()
	if !ok {
		t.Fatal("first Open refused")
	}
	if _, ok := f.Open(); !ok {
		t.Fatal("second Open refused before the first read the rest")
	}
	if _, err := io.ReadAll(r); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Open(); ok {
		t.Fatal("Open accepted after the rest was read")
	}

	short, ctype := formBody(t, formPart{name: "model", value: "m"})
	g, err := openai.ReadForm(bytes.NewReader(short), ctype, body.Options{Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Release()
	for range 2 {
		if got, err := readAll(t, g); err != nil || !bytes.Equal(got, short) {
			t.Fatalf("short body resent: %q, %v", got, err)
		}
	}
}

// chunkReader returns data n bytes at a time.
type chunkReader struct {
	data []byte
	n    int
	off  int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.off >= len(c.data) {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.data[c.off:])
	c.off += n
	return n, nil
}

// FuzzReadForm: a body ReadForm accepts in whole has exactly one model field for mime/multipart
// too, with the same value, and is passed on byte for byte; no body panics it.
func FuzzReadForm(f *testing.F) {
	seed, ctype := formBody(f, formPart{name: "model", value: "whisper-1"}, formPart{name: "file", value: "x", file: "a"})
	_, boundary, _ := strings.Cut(ctype, "boundary=")
	f.Add(seed, boundary, 7)
	f.Add([]byte("--B\r\nContent-Disposition: form-data; name=model\r\n\r\nm\r\n--B--"), "B", 1)
	f.Add([]byte("--B\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\na\r\n--B\r\n"+
		"Content-Disposition: form-data; name=\"model\"\r\n\r\nb\r\n--B--\r\n"), "B", 3)
	f.Add([]byte("--B\nContent-Disposition: form-data; name=\"model\"\n\nm\n--B--\n"), "B", 2)
	f.Fuzz(func(t *testing.T, data []byte, boundary string, chunk int) {
		if chunk < 1 || chunk > 1<<16 {
			chunk = 1 << 10
		}
		ctype := `multipart/form-data; boundary="` + strings.ReplaceAll(boundary, `"`, "") + `"`
		budget := body.NewBudget(1 << 20)
		form, err := openai.ReadForm(&chunkReader{data: data, n: chunk}, ctype, body.Options{Limit: 1 << 16, Budget: budget})
		if err != nil {
			return
		}
		defer form.Release()
		r, _ := form.Open()
		sent, err := io.ReadAll(r)
		if err != nil {
			return
		}
		if !bytes.Equal(sent, data) {
			t.Fatalf("sent %q, received %q", sent, data)
		}
		_, params, _ := strings.Cut(ctype, "boundary=")
		mr := multipart.NewReader(bytes.NewReader(data), strings.Trim(params, `"`))
		var models []string
		for {
			p, err := mr.NextRawPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("ReadForm accepted a body mime/multipart refuses: %v", err)
			}
			v, err := io.ReadAll(p)
			if err != nil {
				t.Fatalf("ReadForm accepted a body mime/multipart cannot read: %v", err)
			}
			if strings.EqualFold(p.FormName(), "model") {
				models = append(models, string(v))
			}
		}
		if len(models) != 1 || models[0] != form.Model {
			t.Fatalf("ReadForm read model %q, mime/multipart %q", form.Model, models)
		}
	})
}

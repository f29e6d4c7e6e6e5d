package extproc

import (
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// received is one ProcessingRequest as the codec decodes it for the exchange: the bytes of a
// request or response body chunk alias the received gRPC buffer instead of being copied out of
// it (protobuf-go always copies bytes fields), so a 64 KiB chunk costs no allocation. The
// exchange passes a *received to RecvMsg and frees buf when it no longer uses the body.
type received struct {
	req *extprocv3.ProcessingRequest
	buf mem.Buffer // holds the aliased body; nil when nothing aliases received memory
}

// keep hands the buffer to the caller, who must free it; free then does nothing.
func (r *received) keep() mem.Buffer {
	b := r.buf
	r.buf = nil
	return b
}

// free releases the buffer unless keep took it.
func (r *received) free() {
	if r.buf != nil {
		r.buf.Free()
		r.buf = nil
	}
}

// Field numbers of envoy.service.ext_proc.v3.ProcessingRequest and HttpBody.
const (
	fieldRequestHeaders   = 2 // first field of the oneof "request"
	fieldRequestBody      = 4
	fieldResponseBody     = 5
	fieldResponseTrailers = 7 // last field of the oneof "request"
	fieldBodyBytes        = 1
	fieldBodyEndOfStream  = 2
)

// decodeRequest decodes a ProcessingRequest from b. When the message is a body chunk (its oneof
// holds only request_body or response_body, and that HttpBody has no field but body and
// end_of_stream) the body aliases b and aliased is true; every other field is decoded by
// protobuf-go as usual. Any other message, or anything unusual in the wire format, is decoded by
// protobuf-go alone, which copies, so the result equals proto.Unmarshal's in every case.
func decodeRequest(b []byte) (req *extprocv3.ProcessingRequest, aliased bool, err error) {
	req = &extprocv3.ProcessingRequest{}
	start, end, num, ok := bodyField(b)
	if ok {
		var body *extprocv3.HttpBody
		if body, ok = decodeBody(b[start:end]); ok {
			if err := mergeFields(req, b[:start], b[end:]); err != nil {
				return nil, false, err
			}
			if num == fieldRequestBody {
				req.Request = &extprocv3.ProcessingRequest_RequestBody{RequestBody: body}
			} else {
				req.Request = &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: body}
			}
			return req, len(body.Body) > 0, nil
		}
	}
	if err := proto.Unmarshal(b, req); err != nil {
		return nil, false, err
	}
	return req, false, nil
}

// bodyField finds the one field of the oneof "request" in the message b when it is a body
// chunk: the bounds of its value and its number. ok is false for any other message, when the
// oneof is set more than once, or when the wire format does not parse.
func bodyField(b []byte) (start, end int, num protowire.Number, ok bool) {
	for off := 0; off < len(b); {
		n, typ, tagLen := protowire.ConsumeTag(b[off:])
		if tagLen < 0 {
			return 0, 0, 0, false
		}
		valLen := protowire.ConsumeFieldValue(n, typ, b[off+tagLen:])
		if valLen < 0 {
			return 0, 0, 0, false
		}
		if n >= fieldRequestHeaders && n <= fieldResponseTrailers {
			if num != 0 || (n != fieldRequestBody && n != fieldResponseBody) || typ != protowire.BytesType {
				return 0, 0, 0, false
			}
			start, end, num = off, off+tagLen+valLen, n
		}
		off += tagLen + valLen
	}
	return start, end, num, num != 0
}

// decodeBody decodes the field (tag and length included) holding an HttpBody, aliasing its
// bytes. ok is false when it holds any field but one body and end_of_stream.
func decodeBody(field []byte) (body *extprocv3.HttpBody, ok bool) {
	_, _, tagLen := protowire.ConsumeTag(field)
	v, n := protowire.ConsumeBytes(field[tagLen:])
	if n < 0 {
		return nil, false
	}
	body = &extprocv3.HttpBody{}
	seenBody := false
	for len(v) > 0 {
		num, typ, tagLen := protowire.ConsumeTag(v)
		if tagLen < 0 {
			return nil, false
		}
		v = v[tagLen:]
		switch {
		case num == fieldBodyBytes && typ == protowire.BytesType && !seenBody:
			data, n := protowire.ConsumeBytes(v)
			if n < 0 {
				return nil, false
			}
			if len(data) > 0 {
				body.Body = data[:len(data):len(data)] // an append must not write past it
			}
			seenBody, v = true, v[n:]
		case num == fieldBodyEndOfStream && typ == protowire.VarintType:
			x, n := protowire.ConsumeVarint(v)
			if n < 0 {
				return nil, false
			}
			body.EndOfStream, v = x != 0, v[n:]
		default:
			return nil, false
		}
	}
	return body, true
}

// mergeFields decodes the fields before and after the body field into req, as decoding the whole
// message would: the wire format of a message is the concatenation of its fields.
func mergeFields(req *extprocv3.ProcessingRequest, before, after []byte) error {
	opts := proto.UnmarshalOptions{Merge: true}
	if len(before) > 0 {
		if err := opts.Unmarshal(before, req); err != nil {
			return err
		}
	}
	if len(after) > 0 {
		return opts.Unmarshal(after, req)
	}
	return nil
}

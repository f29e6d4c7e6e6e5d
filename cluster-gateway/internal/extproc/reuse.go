package extproc

import (
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/contract"
)

// The answers an exchange sends most are built in messages embedded in one struct instead of a
// fresh tree of protobuf structs each time: a streamed body chunk was seven allocations and the
// decision about thirty-five. The chunk answer is reused for every chunk of an exchange, which
// is safe because Send marshals the message before it returns.

// chunkAnswer is a streamed body mutation, for request or response body chunks, reused for
// every chunk of one exchange.
type chunkAnswer struct {
	msg      extprocv3.ProcessingResponse
	request  extprocv3.ProcessingResponse_RequestBody
	response extprocv3.ProcessingResponse_ResponseBody
	body     extprocv3.BodyResponse
	common   extprocv3.CommonResponse
	mutation extprocv3.BodyMutation
	oneof    extprocv3.BodyMutation_StreamedResponse
	streamed extprocv3.StreamedBodyResponse
}

// set fills the answer for one chunk of the request body (request) or of the response body,
// and returns it. The message refers to chunk until the next set.
func (c *chunkAnswer) set(request bool, chunk []byte, eos bool) *extprocv3.ProcessingResponse {
	c.streamed.Body, c.streamed.EndOfStream = chunk, eos
	c.oneof.StreamedResponse = &c.streamed
	c.mutation.Mutation = &c.oneof
	c.common.BodyMutation = &c.mutation
	c.body.Response = &c.common
	if request {
		c.request.RequestBody = &c.body
		c.msg.Response = &c.request
	} else {
		c.response.ResponseBody = &c.body
		c.msg.Response = &c.response
	}
	return &c.msg
}

// maxDecisionHeaders is the number of headers a decision sets: destination, model, base model,
// content-length and the prefill pod (x-prefiller-host-port).
const maxDecisionHeaders = 5

// decisionAnswer is the answer to the request headers that carries a decision, with the
// envoy.lb dynamic metadata, built in one struct (newDecisionAnswer). Answers are not pooled
// across exchanges: reuse saved 11 of an exchange's ~320 allocations and no measurable CPU time
// (docs/architecture.md#pools).
type decisionAnswer struct {
	msg     extprocv3.ProcessingResponse
	oneof   extprocv3.ProcessingResponse_RequestHeaders
	headers extprocv3.HeadersResponse
	common  extprocv3.CommonResponse
	mut     extprocv3.HeaderMutation
	opts    [maxDecisionHeaders]corev3.HeaderValueOption
	vals    [maxDecisionHeaders]corev3.HeaderValue
	set     []*corev3.HeaderValueOption
	raw     []byte // the header values' bytes
	remove  []string

	meta, inner         structpb.Struct
	metaValue, addrsVal structpb.Value
	structKind          structpb.Value_StructValue
	stringKind          structpb.Value_StringValue
	addrs               strings.Builder
}

// newDecisionAnswer returns an empty answer.
func newDecisionAnswer() *decisionAnswer {
	a := &decisionAnswer{}
	a.meta.Fields = make(map[string]*structpb.Value, 1)
	a.inner.Fields = make(map[string]*structpb.Value, 1)
	return a
}

// reset empties a for a new decision.
func (a *decisionAnswer) reset() {
	a.set, a.raw, a.remove = a.set[:0], a.raw[:0], a.remove[:0]
	a.addrs.Reset()
}

// setHeader adds a header mutation replacing any value Envoy has. The value's bytes are
// appended to a.raw; a.raw must have room for every value (see fill), so earlier values stay
// where they are.
func (a *decisionAnswer) setHeader(key, value string) {
	i := len(a.set)
	start := len(a.raw)
	a.raw = append(a.raw, value...)
	a.vals[i] = corev3.HeaderValue{Key: key, RawValue: a.raw[start:len(a.raw):len(a.raw)]}
	a.opts[i] = corev3.HeaderValueOption{
		Header:       &a.vals[i],
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
	}
	a.set = append(a.set, &a.opts[i])
}

// fill sets the answer: headers (destination, model names, the prefill pod when prefill is not
// "", content-length when bodyLen > 0), the headers to remove, and the metadata naming every
// target in order.
func (a *decisionAnswer) fill(
	targets []framework.Endpoint,
	model, base, prefill string,
	bodyLen int,
	remove []string,
) *extprocv3.ProcessingResponse {
	a.reset()
	var length [20]byte
	n := strconv.AppendInt(length[:0], int64(bodyLen), 10)
	if need := len(targets[0].Meta().Address) + len(model) + len(base) + len(prefill) + len(n); cap(a.raw) < need {
		a.raw = make([]byte, 0, need)
	}
	a.setHeader(contract.HeaderDestination, targets[0].Meta().Address)
	a.setHeader(contract.HeaderModelName, model)
	a.setHeader(contract.HeaderBaseModelName, base)
	if prefill != "" {
		a.setHeader(contract.HeaderPrefillerHostPort, prefill)
	}
	if bodyLen > 0 {
		a.setHeader("content-length", string(n)) // the conversion does not escape
	}
	a.remove = append(a.remove, remove...)
	a.mut = extprocv3.HeaderMutation{SetHeaders: a.set, RemoveHeaders: a.remove}
	a.common = extprocv3.CommonResponse{ClearRouteCache: true, HeaderMutation: &a.mut}
	a.headers.Response = &a.common
	a.oneof.RequestHeaders = &a.headers
	a.msg.Response, a.msg.DynamicMetadata = &a.oneof, a.metadata(targets)
	return &a.msg
}

// metadata is {"envoy.lb": {"x-gateway-destination-endpoint": "ip:port,fallback,..."}}.
func (a *decisionAnswer) metadata(targets []framework.Endpoint) *structpb.Struct {
	n := len(targets) - 1
	for _, t := range targets {
		n += len(t.Meta().Address)
	}
	a.addrs.Grow(n)
	for i, t := range targets {
		if i > 0 {
			a.addrs.WriteByte(',')
		}
		a.addrs.WriteString(t.Meta().Address)
	}
	a.stringKind.StringValue = a.addrs.String()
	a.addrsVal.Kind = &a.stringKind
	a.inner.Fields[contract.HeaderDestination] = &a.addrsVal
	a.structKind.StructValue = &a.inner
	a.metaValue.Kind = &a.structKind
	a.meta.Fields[MetadataNamespace] = &a.metaValue
	return &a.meta
}

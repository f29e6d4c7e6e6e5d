package extproc

import (
	"slices"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/apierror"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline"
	"github.com/switchyard-dev/switchyard/contract"
)

// setHeader is a header mutation that replaces any value Envoy already has.
func setHeader(key, value string) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{
		Header:       &corev3.HeaderValue{Key: key, RawValue: []byte(value)},
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
	}
}

// requestHeadersResponse fills a, a new answer, with the decision: destination header,
// model headers, the body's length, removal of client-supplied routing headers, and the
// envoy.lb dynamic metadata.
func (x *exchange) requestHeadersResponse(
	a *decisionAnswer,
	d *pipeline.Decision,
	targets []framework.Endpoint,
) *extprocv3.ProcessingResponse {
	prefill := pipeline.PrefillAddress(d.Result)
	var remove []string
	for k := range x.headers {
		if contract.IsRouting(k) && k != contract.HeaderDestination && k != contract.HeaderModelName &&
			k != contract.HeaderBaseModelName && (prefill == "" || k != contract.HeaderPrefillerHostPort) {
			remove = append(remove, k)
		}
	}
	slices.Sort(remove)
	msg := a.fill(targets, d.Request.Model, d.Request.BaseModel, prefill, len(x.body), remove)
	x.traceHeaders(&a.mut)
	return msg
}

// destinationMetadata is {"envoy.lb": {"x-gateway-destination-endpoint": value}}.
func destinationMetadata(value string) *structpb.Struct {
	inner := &structpb.Struct{
		Fields: map[string]*structpb.Value{contract.HeaderDestination: structpb.NewStringValue(value)},
	}
	return &structpb.Struct{Fields: map[string]*structpb.Value{MetadataNamespace: structpb.NewStructValue(inner)}}
}

// sendBody sends the body back as streamed body mutations of at most ChunkLimit bytes; the
// last carries end_of_stream when eos. An empty body is one empty chunk.
func (x *exchange) sendBody(body []byte, eos bool) error {
	for start := 0; start == 0 || start < len(body); start += ChunkLimit {
		end := min(start+ChunkLimit, len(body))
		if err := x.send(x.chunk.set(true, body[start:end], eos && end == len(body))); err != nil {
			return err
		}
	}
	return nil
}

// responseHeadersResponse tags the response with the serving cluster, region and endpoint.
func (x *exchange) responseHeadersResponse() *extprocv3.ProcessingResponse {
	var set []*corev3.HeaderValueOption
	set = append(set, servedBy(x.s.cfg)...)
	if x.target != "" && x.s.cfg.EndpointHeader {
		set = append(set, setHeader(strings.ToLower(contract.HeaderEndpoint), x.target))
	}
	if x.decision != nil && x.decision.Result.PrefixScoring != "" {
		set = append(set, setHeader(contract.HeaderPrefixScoring, x.decision.Result.PrefixScoring))
	}
	if x.pd != "" {
		set = append(set, setHeader(contract.HeaderPD, x.pd))
	}
	if x.prefillTarget != "" && x.s.cfg.EndpointHeader {
		set = append(set, setHeader(contract.HeaderPrefillEndpoint, x.prefillTarget))
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{
		ResponseHeaders: &extprocv3.HeadersResponse{Response: &extprocv3.CommonResponse{
			HeaderMutation: &extprocv3.HeaderMutation{SetHeaders: set},
		}},
	}}
}

func servedBy(cfg Config) []*corev3.HeaderValueOption {
	var set []*corev3.HeaderValueOption
	if cfg.Cluster != "" {
		set = append(set, setHeader(strings.ToLower(contract.HeaderCluster), cfg.Cluster))
	}
	if cfg.Region != "" {
		set = append(set, setHeader(strings.ToLower(contract.HeaderRegion), cfg.Region))
	}
	return set
}

// immediateResponse renders e as an ext_proc immediate response.
func immediateResponse(e *apierror.Error, cfg Config) *extprocv3.ProcessingResponse {
	set := servedBy(cfg)
	for k, vs := range e.Headers() {
		set = append(set, setHeader(strings.ToLower(k), vs[0]))
	}
	slices.SortFunc(set, func(a, b *corev3.HeaderValueOption) int { return strings.Compare(a.Header.Key, b.Header.Key) })
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{
		ImmediateResponse: &extprocv3.ImmediateResponse{
			Status:  &typev3.HttpStatus{Code: typev3.StatusCode(e.Status)},
			Headers: &extprocv3.HeaderMutation{SetHeaders: set},
			Body:    e.JSON(),
			Details: string(e.Code),
		},
	}}
}

// restrict keeps the targets whose address is in subset (all of them when subset is nil).
func restrict[E framework.Endpoint](targets []E, subset []string) []E {
	if subset == nil {
		return targets
	}
	var out []E
	for _, t := range targets {
		if slices.Contains(subset, t.Meta().Address) {
			out = append(out, t)
		}
	}
	return out
}

// noBody answers a request without a body (e.g. GET /v1/models through Envoy): it goes to the
// usable endpoint with the fewest in-flight requests, as there is no model to schedule on.
func (x *exchange) noBody() error {
	x.decided = true
	now := time.Now()
	var best *datastore.Endpoint
	for _, ep := range restrict(x.s.store.Endpoints(), x.subset) {
		if ep.Ejected(now) || ep.Models() == nil {
			continue
		}
		if best == nil || ep.InFlight() < best.InFlight() {
			best = ep
		}
	}
	if best == nil {
		return x.immediate(apierror.Unavailable("no endpoint available", 1))
	}
	return x.send(&extprocv3.ProcessingResponse{
		Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{
			Response: &extprocv3.CommonResponse{
				ClearRouteCache: true,
				HeaderMutation: &extprocv3.HeaderMutation{
					SetHeaders: []*corev3.HeaderValueOption{setHeader(contract.HeaderDestination, best.Address)},
				},
			},
		}},
		DynamicMetadata: destinationMetadata(best.Address),
	})
}

package admin

import (
	"context"
	"fmt"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract/promlabel"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
	"github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1/adminv1connect"
)

// metrics are the service's collectors.
type metrics struct {
	calls   *prometheus.CounterVec
	watches prometheus.Gauge
	methods map[string]string // procedure ("/pkg.Service/Method") → method label
}

// adminMethods maps every AdminService procedure to its method name, the method label's only
// values besides promlabel.Other: a call the token check refuses may name any path.
func adminMethods() map[string]string {
	sd := adminv1.File_switchyard_admin_v1_admin_proto.Services().ByName("AdminService")
	out := map[string]string{}
	for i := range sd.Methods().Len() {
		name := string(sd.Methods().Get(i).Name())
		out["/"+adminv1connect.AdminServiceName+"/"+name] = name
	}
	return out
}

// newMetrics creates the collectors and registers them on reg (nothing when reg is nil).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_router_admin_calls_total",
			Help: "Admin API calls by method and result code (ok or the connect code).",
		}, []string{"method", "code"}),
		watches: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchyard_router_admin_watches",
			Help: "WatchClusters streams open now.",
		}),
		methods: adminMethods(),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.calls, m.watches} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("admin: register metrics: %w", err)
		}
	}
	return m, nil
}

// interceptor counts every call, unary and streaming, by method and code. It runs outermost, so
// calls rejected by the token check count too.
func (m *metrics) interceptor() connect.Interceptor { return &metricsInterceptor{m: m} }

type metricsInterceptor struct{ m *metrics }

func (i *metricsInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		resp, err := next(ctx, req)
		i.m.count(req.Spec().Procedure, err)
		return resp, err
	}
}

func (i *metricsInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i *metricsInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		err := next(ctx, conn)
		i.m.count(conn.Spec().Procedure, err)
		return err
	}
}

// count counts a call of procedure (an AdminService procedure, or the path of a refused
// request: anything else is counted under promlabel.Other).
func (m *metrics) count(procedure string, err error) {
	code := "ok"
	if err != nil {
		code = connect.CodeOf(err).String()
	}
	method, ok := m.methods[procedure]
	if !ok {
		method = promlabel.Other
	}
	m.calls.WithLabelValues(method, code).Inc()
}

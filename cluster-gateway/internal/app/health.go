package app

import (
	"net"
	"strconv"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/extproc"
)

// buildHealth builds the gRPC health service of --grpc-health-port, unless it is 0. It is
// SERVING when the gateway is ready by the test /readyz answers with.
func (g *Gateway) buildHealth() error {
	if g.cfg.GRPCHealthPort == 0 {
		return nil
	}
	hc := extproc.DefaultHealthConfig()
	hc.Ready = g.Ready
	h, err := extproc.NewHealth(hc, g.log)
	if err != nil {
		return err
	}
	g.health = h
	return nil
}

// healthAddress is where the health port listens: --grpc-health-port on the host of
// --ext-proc-listen, or of --metrics-listen without ext_proc (":PORT" for an empty host, as
// GIE's endpoint picker listens).
func (g *Gateway) healthAddress() string {
	addr := g.cfg.ExtProcListen
	if addr == "" {
		addr = g.cfg.MetricsListen
	}
	host, _, _ := net.SplitHostPort(addr) // validated
	return net.JoinHostPort(host, strconv.Itoa(g.cfg.GRPCHealthPort))
}

package gossip

import (
	"fmt"
	"net"
	"strconv"
)

// ParseAddr splits a gossip address as written in flags ("host:port", e.g. --gossip-bind) into
// the host and port of Config's BindAddr/BindPort or AdvertiseAddr/AdvertisePort. An empty host
// means every interface ("0.0.0.0").
func ParseAddr(addr string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return "", 0, fmt.Errorf("gossip: port %q of %q is not a port number", port, addr)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	return host, n, nil
}

// Package ctl is switchyardctl, the command-line client of the global router's admin API
// (switchyard.admin.v1.AdminService): it lists and watches clusters, drains and undrains clusters
// and regions, reads and writes per-model routing policies, registers and revokes cluster
// identities, explains routing decisions and lists the gossip membership. Flags may stand before or after the
// subcommand. Output is a human table
// by default, or protobuf JSON with the proto field names and every field (-o json).
package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"connectrpc.com/connect"
)

// Exit codes.
const (
	// ExitOK: the command succeeded.
	ExitOK = 0
	// ExitAPIError: the router answered with an error, or could not be reached.
	ExitAPIError = 1
	// ExitUsage: the command line is wrong (unknown command or flag, missing argument, unreadable
	// token or policy file).
	ExitUsage = 2
)

// Environment variables that supply defaults for flags.
const (
	// EnvAddr is the default of --addr.
	EnvAddr = "SWITCHYARD_ADDR"
	// EnvTokenFile is the default of --token-file.
	EnvTokenFile = "SWITCHYARD_TOKEN_FILE"
)

// DefaultAddr is the admin API address used when neither --addr nor SWITCHYARD_ADDR is set: the
// local stack's first router.
const DefaultAddr = "http://127.0.0.1:9090"

// Main runs switchyardctl with args (without the program name) and the process environment, and
// returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	return Run(context.Background(), args, os.Getenv, stdout, stderr)
}

// Run runs switchyardctl with args (without the program name), reading environment variables
// through getenv, and returns the exit code. ctx cancels the call (and ends a watch).
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	inv, err := parse(args, getenv)
	if errors.Is(err, errHelp) {
		fmt.Fprint(stdout, usage)
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "switchyardctl: %v\n\n%s", err, usage)
		return ExitUsage
	}
	cmd, err := inv.prepare()
	if err != nil {
		fmt.Fprintf(stderr, "switchyardctl: %s: %v\n", inv.name, err)
		return ExitUsage
	}
	c := &caller{inv: inv, out: stdout}
	if err := cmd(ctx, c); err != nil {
		return report(stderr, inv.name, err)
	}
	return ExitOK
}

// report prints a failed command's error with its connect code and returns the exit code.
func report(stderr io.Writer, name string, err error) int {
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "switchyardctl: %s: %v\n", name, ue.err)
		return ExitUsage
	}
	msg := err.Error()
	if ce := new(connect.Error); errors.As(err, &ce) {
		msg = fmt.Sprintf("%s (%s)", ce.Message(), strings.ToUpper(ce.Code().String()))
	}
	fmt.Fprintf(stderr, "switchyardctl: %s: %s\n", name, msg)
	return ExitAPIError
}

// usageError is a command-line mistake found while running a command.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }

func usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

const usage = `Usage: switchyardctl [flags] COMMAND [args] [flags]

Commands:
  clusters [--model=M] [--watch [--interval=D]]   the router's cluster table
  drain CLUSTER | undrain CLUSTER                  drain or undrain a cluster on every router
  drain-region REGION | undrain-region REGION      drain or undrain a region on every router
  policy get MODEL                                 a model's stored policy
  policy put --model=M [--overflow-threshold=F] [--allowed-regions=a,b] [--overflow-cap=N]
             [--ttft-slo=D] [--scorer-weights=rtt=1,queue=2] [--revision=N]
  policy put -f FILE [--revision=N]                the policy as protobuf JSON ("-" reads stdin)
  policy delete MODEL [--revision=N]               remove a policy (the defaults apply again)
  policy list                                      every stored policy
  explain --model=M [--prompt=TEXT] [--prompt-tokens=N] [--region=R]
                                                   dry-run the routing decision
  members                                          the gossip membership
  register-cluster CLUSTER --region=R --gateway-urls=URL[,URL] --public-key-file=FILE[,FILE]
             [--models=a,b] [--revision=N | --replace]
                                                   register (or, with the revision read, update)
                                                   a cluster's identity: summaries must match it;
                                                   --replace writes over whatever is stored, and
                                                   nothing when it already matches (idempotent)
  revoke-cluster CLUSTER [--revision=N]            remove a cluster's registration
  registrations                                    every registration and the identity mode
  register-region REGION --public-key-file=FILE[,FILE] [--revision=N | --replace]
                                                   register (or update) the keys a region's
                                                   aggregators sign its region digests with;
                                                   --replace writes over whatever is stored
  revoke-region REGION [--revision=N]              remove a region's registration
  tenant set NAME [--tokens-per-minute=N] [--requests-per-second=F] [--max-concurrent=N]
             [--api-key-sha256=HEX[,HEX]] [--revision=N]
                                                   create or replace a tenant's limits (0: no
                                                   limit) and API keys (SHA-256 digests, never
                                                   the keys); without --revision, over whatever
                                                   is stored
  tenant get NAME | tenant delete NAME [--revision=N] | tenant list
                                                   a tenant, its removal, every tenant

Flags (before or after the command):
  --addr=URL          admin API URL (env SWITCHYARD_ADDR; default http://127.0.0.1:9090)
  --token-file=FILE   file holding the bearer token (env SWITCHYARD_TOKEN_FILE)
  -o, --output=FMT    table (default) or json (protobuf JSON, proto field names)
  --protocol=P        connect (default), grpc or grpc-web
  --timeout=D         bound on one call (default 10s; a watch runs until interrupted)
  --ca-file=FILE      CA bundle to verify an https:// router
  --cert-file=FILE, --key-file=FILE   client certificate for mTLS

Exit codes: 0 success, 1 the router answered an error (its code is shown) or was unreachable,
2 a usage error.
`

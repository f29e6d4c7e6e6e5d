package admin

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
)

// fieldError is an invalid request field; it becomes InvalidArgument naming the field.
type fieldError struct {
	field, msg string
}

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

// invalidField returns the error for a request field that is missing or wrong.
func invalidField(field, format string, args ...any) error {
	return &fieldError{field: field, msg: fmt.Sprintf(format, args...)}
}

// unauthenticated returns the error for a call without the right bearer token.
func unauthenticated(msg string) *connect.Error {
	return connect.NewError(connect.CodeUnauthenticated, errors.New(msg))
}

// toConnect translates an error of the service or its dependencies to a connect error. It is the
// one place where codes are chosen: invalid arguments (the request's or the config store's) are
// InvalidArgument, a missing policy NotFound, a stale revision FailedPrecondition, a stored policy
// that cannot be read DataLoss, and etcd's own
// gRPC codes pass through. A deadline that expired while the caller's own context is still live
// is the config store's timeout: etcd could not be reached, which is Unavailable (retryable), not
// the caller's DeadlineExceeded.
func toConnect(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		return err
	}
	code := codeOf(err)
	if code == connect.CodeDeadlineExceeded && ctx.Err() == nil {
		return connect.NewError(connect.CodeUnavailable, fmt.Errorf("config store unreachable: %w", err))
	}
	return connect.NewError(code, err)
}

func codeOf(err error) connect.Code {
	var fe *fieldError
	switch {
	case errors.Is(err, configstore.ErrUnreadable):
		return connect.CodeDataLoss
	case errors.As(err, &fe), errors.Is(err, configstore.ErrInvalid):
		return connect.CodeInvalidArgument
	case errors.Is(err, configstore.ErrNotFound):
		return connect.CodeNotFound
	case errors.Is(err, configstore.ErrConflict):
		return connect.CodeFailedPrecondition
	case errors.Is(err, context.Canceled):
		return connect.CodeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return connect.CodeDeadlineExceeded
	}
	var coded interface{ Code() codes.Code } // etcd's server errors
	if errors.As(err, &coded) && coded.Code() != codes.OK && coded.Code() != codes.Unknown {
		return connect.Code(coded.Code())
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.OK && st.Code() != codes.Unknown {
		return connect.Code(st.Code())
	}
	return connect.CodeInternal
}

// errorInterceptor translates every error a handler returns with toConnect and logs the ones
// that are the server's fault.
func (s *Server) errorInterceptor() connect.Interceptor {
	return &errorInterceptor{s: s}
}

type errorInterceptor struct{ s *Server }

func (e *errorInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		resp, err := next(ctx, req)
		return resp, e.translate(ctx, req.Spec().Procedure, err)
	}
}

func (e *errorInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (e *errorInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		return e.translate(ctx, conn.Spec().Procedure, next(ctx, conn))
	}
}

func (e *errorInterceptor) translate(ctx context.Context, procedure string, err error) error {
	if err == nil { // connect.CodeOf(nil) is Unknown: a success must not be logged as a failure
		return nil
	}
	err = toConnect(ctx, err)
	switch connect.CodeOf(err) {
	case connect.CodeInternal, connect.CodeUnknown, connect.CodeUnavailable, connect.CodeDataLoss:
		e.s.log.Warn("admin call failed", "procedure", procedure, "err", err)
	}
	return err
}

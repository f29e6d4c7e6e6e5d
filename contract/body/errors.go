package body

import (
	"errors"
	"fmt"
)

// Sentinels for errors.Is. The errors a Buffer returns are the typed *TooLargeError and
// *BudgetError, which match them.
var (
	// ErrTooLarge is matched by a body longer than its limit (an edge answers 413).
	ErrTooLarge = errors.New("body: request body too large")
	// ErrBudgetExhausted is matched when the process's in-flight body budget is spent (an edge
	// answers 503 with Retry-After: the request may succeed once other bodies are done).
	ErrBudgetExhausted = errors.New("body: in-flight body budget exhausted")
)

// TooLargeError reports a body longer than Limit bytes, declared or read.
type TooLargeError struct {
	// Limit is the largest body accepted, in bytes.
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("body: request body exceeds %d bytes", e.Limit)
}

// Is matches ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// BudgetError reports that a body could not grow because the process's in-flight body budget
// is spent.
type BudgetError struct {
	// Budget is the budget's size in bytes; Wanted the reservation refused.
	Budget, Wanted int64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf(
		"body: the in-flight request body budget (%d bytes) is spent; %d more bytes refused",
		e.Budget,
		e.Wanted,
	)
}

// Is matches ErrBudgetExhausted.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetExhausted }

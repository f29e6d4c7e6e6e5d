package body_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/switchyard-dev/switchyard/contract/body"
)

// An edge reads a request body within the process's budget and maps the two refusals to their
// answers.
func Example() {
	budget := body.NewBudget(256 << 20) // shared by every request of the process
	req := strings.NewReader(`{"model":"llama","prompt":"hello"}`)
	b, err := body.Read(req, body.Options{Limit: 32 << 20, Declared: 34, Budget: budget})
	switch {
	case errors.Is(err, body.ErrTooLarge):
		fmt.Println("413")
	case errors.Is(err, body.ErrBudgetExhausted):
		fmt.Println("503, Retry-After: 1")
	case err != nil:
		fmt.Println("400:", err)
	default:
		defer b.Release() // when the request is done, not when the body is parsed
		fmt.Println(len(b.Bytes()), "bytes,", budget.InUse(), "reserved")
	}
	// Output: 34 bytes, 35 reserved
}

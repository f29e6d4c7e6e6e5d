package apierror

import "testing"

func TestErrorJSON(t *testing.T) {
	e := Overloaded("saturated", 2)
	if got := string(
		e.JSON(),
	); got != `{"error":{"message":"saturated","type":"rate_limit_error","param":null,"code":"overloaded"}}` {
		t.Fatalf("json = %s", got)
	}
	h := e.Headers()
	if h.Get("Retry-After") != "2" || h.Get("X-Switchyard-Overflow") != "1" {
		t.Fatalf("headers = %v", h)
	}
}

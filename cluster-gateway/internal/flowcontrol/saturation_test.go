package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// errScheduler answers every Schedule with err.
type errScheduler struct{ err error }

func (s errScheduler) Schedule(context.Context, *framework.Request) (*framework.Result, error) {
	return nil, s.err
}

// Without an IsSaturated option the controller takes the framework's one saturation outcome:
// framework.ErrSaturated (however wrapped) is refused as an overflow when queueing is off, and
// every other error comes back as the scheduler returned it.
func TestDefaultSaturationOutcome(t *testing.T) {
	other := errors.New("no usable endpoint")
	tests := []struct {
		name         string
		err          error
		wantOverflow bool
	}{
		{"framework.ErrSaturated", framework.ErrSaturated, true},
		{"wrapped", fmt.Errorf("model m: %w", framework.ErrSaturated), true},
		{"another error", other, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Enabled = false
			c, err := New(cfg, errScheduler{tt.err}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Admit(context.Background(), &framework.Request{ID: "r", Model: "m"})
			if got := errors.Is(err, ErrOverflow); got != tt.wantOverflow {
				t.Fatalf("Admit: %v; overflow %v, want %v", err, got, tt.wantOverflow)
			}
			if !tt.wantOverflow && !errors.Is(err, tt.err) {
				t.Fatalf("Admit: %v, want the scheduler's error", err)
			}
		})
	}
}

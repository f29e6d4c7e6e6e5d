package flowcontrol

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/contract"
)

// predictingScheduler is a fakeScheduler that predicts every placed request's TTFT as ttft and
// records the results given back.
type predictingScheduler struct {
	*fakeScheduler
	ttft      time.Duration
	discarded int
}

// Schedule places as fakeScheduler does, on one endpoint.
func (p *predictingScheduler) Schedule(ctx context.Context, req *framework.Request) (*framework.Result, error) {
	res, err := p.fakeScheduler.Schedule(ctx, req)
	if res != nil {
		res.Targets = []framework.Endpoint{datastore.NewEndpoint("10.0.0.1:8000", "", "", nil)}
	}
	return res, err
}

func (p *predictingScheduler) PredictChosen(*framework.Request, *framework.Result) (time.Duration, bool) {
	return p.ttft, true
}

func (p *predictingScheduler) Discard(*framework.Result) { p.discarded++ }

// A request whose router offers to take it elsewhere is handed back when it would queue, or when
// its predicted TTFT is above the offer; otherwise it is placed as any other.
func TestHandBack(t *testing.T) {
	tests := []struct {
		name      string
		capacity  int
		ttft      time.Duration
		offer     time.Duration
		wantBack  bool
		wantWhy   string
		discarded int
	}{
		{"no offer, predicted late: placed", 1, 2 * time.Second, 0, false, "", 0},
		{"offer, predicted sooner: placed", 1, 400 * time.Millisecond, 500 * time.Millisecond, false, "", 0},
		{"offer, predicted at the offer: placed", 1, 500 * time.Millisecond, 500 * time.Millisecond, false, "", 0},
		{
			"offer, predicted later: handed back",
			1,
			900 * time.Millisecond,
			500 * time.Millisecond,
			true,
			"predicted time to first token 900ms, above the 500ms offered elsewhere",
			1,
		},
		{"offer, saturated: handed back, not queued", 0, 0, 500 * time.Millisecond, true, "every endpoint is saturated", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sched := &predictingScheduler{
				fakeScheduler: &fakeScheduler{capacity: map[string]int{"m": tt.capacity}},
				ttft:          tt.ttft,
			}
			c, err := New(
				DefaultConfig(),
				sched,
				Options{IsSaturated: func(err error) bool { return errors.Is(err, errSaturated) }},
			)
			if err != nil {
				t.Fatal(err)
			}
			req := &framework.Request{ID: "r", Model: "m", HandBackAfter: tt.offer}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			res, err := c.Admit(ctx, req)
			if tt.wantBack {
				if !errors.Is(err, ErrOverflow) || !strings.Contains(err.Error(), tt.wantWhy) {
					t.Fatalf("Admit = %v, %v; want an overflow saying %q", res, err, tt.wantWhy)
				}
				if c.Len() != 0 {
					t.Errorf("a handed-back request was queued")
				}
				if got := testutil.ToFloat64(c.metrics.outcomes.WithLabelValues("handed_back")); got != 1 {
					t.Errorf("handed_back outcomes = %v, want 1", got)
				}
			} else if err != nil || res == nil {
				t.Fatalf("Admit = %v, %v; want the request placed", res, err)
			}
			if sched.discarded != tt.discarded {
				t.Errorf("%d results discarded, want %d", sched.discarded, tt.discarded)
			}
		})
	}
}

func TestHandBackAfterHeader(t *testing.T) {
	tests := []struct {
		value   string
		want    time.Duration
		wantErr bool
	}{
		{"", 0, false},
		{"850", 850 * time.Millisecond, false},
		{" 1 ", time.Millisecond, false},
		{"3600000", time.Hour, false},
		{"3600001", 0, true},
		{"0", 0, true},
		{"-5", 0, true},
		{"1.5", 0, true},
		{"9223372036854775807", 0, true},
		{"soon", 0, true},
	}
	for _, tt := range tests {
		got, err := HandBackAfter(func(name string) string {
			if name == contract.HeaderHandBack {
				return tt.value
			}
			return ""
		})
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("HandBackAfter(%q) = %v, %v; want %v, error %v", tt.value, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), contract.HeaderHandBack) {
			t.Errorf("error %q does not name the header", err)
		}
	}
}

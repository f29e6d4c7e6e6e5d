package discovery_test

import (
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/discovery"
)

// Static endpoints take an optional name, "name=host:port", in the list and in the file's short
// form (the long form has its name key); plain host:port stays valid and gets no name (the
// store names it opaquely). Names must be safe as a response header value and unique.
func TestNamedStaticEndpoints(t *testing.T) {
	tests := []struct {
		name, list, file string
		want             map[string]string // address -> name
		wantErr          string
	}{
		{name: "plain", list: "10.0.0.1:8000", file: "- 10.0.0.1:8000\n", want: map[string]string{"10.0.0.1:8000": ""}},
		{
			name: "named",
			list: "vllm-0=10.0.0.1:8000, vllm-1 = 10.0.0.2:8000",
			file: "- vllm-0=10.0.0.1:8000\n- vllm-1 = 10.0.0.2:8000\n",
			want: map[string]string{"10.0.0.1:8000": "vllm-0", "10.0.0.2:8000": "vllm-1"},
		},
		{name: "mixed", list: "a.b_c-0=[::1]:8000,127.0.0.1:9", file: "- a.b_c-0=[::1]:8000\n- 127.0.0.1:9\n",
			want: map[string]string{"[::1]:8000": "a.b_c-0", "127.0.0.1:9": ""}},
		{name: "empty name", list: "=10.0.0.1:8000", file: "- =10.0.0.1:8000\n", wantErr: "name"},
		{name: "name with a space", list: "my pod=10.0.0.1:8000", file: "- my pod=10.0.0.1:8000\n", wantErr: "only letters"},
		{
			name:    "name with a control byte",
			list:    "p\x01=10.0.0.1:8000",
			file:    "- \"p\\x01=10.0.0.1:8000\"\n",
			wantErr: "only letters",
		},
		{
			name:    "name too long",
			list:    strings.Repeat("p", 254) + "=10.0.0.1:8000",
			file:    "- " + strings.Repeat("p", 254) + "=10.0.0.1:8000\n",
			wantErr: "1 to 253",
		},
		{name: "bad address after a name", list: "p=10.0.0.1", file: "- p=10.0.0.1\n", wantErr: "want host:port"},
		{
			name:    "repeated name",
			list:    "p=10.0.0.1:1,p=10.0.0.2:1",
			file:    "- p=10.0.0.1:1\n- {address: 10.0.0.2:1, name: p}\n",
			wantErr: "given twice",
		},
	}
	for _, tt := range tests {
		for form, parse := range map[string]func() (map[string]string, error){
			"list": func() (map[string]string, error) {
				specs, err := discovery.ParseList(tt.list)
				return namesOf(specs), err
			},
			"file": func() (map[string]string, error) {
				specs, err := discovery.ParseFile([]byte(tt.file))
				return namesOf(specs), err
			},
		} {
			t.Run(tt.name+"/"+form, func(t *testing.T) {
				got, err := parse()
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("err = %v, want mention of %q", err, tt.wantErr)
					}
					return
				}
				if err != nil || len(got) != len(tt.want) {
					t.Fatalf("got %v, %v; want %v", got, err, tt.want)
				}
				for a, n := range tt.want {
					if got[a] != n {
						t.Errorf("%s named %q, want %q", a, got[a], n)
					}
				}
			})
		}
	}
}

func namesOf(specs []datastore.EndpointSpec) map[string]string {
	out := map[string]string{}
	for _, s := range specs {
		out[s.Address] = s.Name
	}
	return out
}

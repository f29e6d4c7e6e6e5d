package importgraph

import (
	"slices"
	"strings"
	"testing"
)

// testPackages is a small workspace: a binary whose app imports a front door and, directly, a store the
// front door imports too; a test helper no command imports; a shared leaf; and a sibling
// module's package.
func testPackages() []Package {
	const r = Root
	return []Package{
		{ImportPath: r + "gw/cmd/gw", Name: "main", Imports: []string{"os", r + "gw/internal/app"}},
		{ImportPath: r + "gw/internal/app", Name: "app", Imports: []string{
			r + "gw/internal/door", r + "gw/internal/store", r + "contract"}},
		{ImportPath: r + "gw/internal/door", Name: "door", Imports: []string{r + "gw/internal/store", "net/http"}},
		{ImportPath: r + "gw/internal/store", Name: "store", Imports: []string{r + "contract"}},
		{ImportPath: r + "gw/internal/plugins/a", Name: "a", Imports: []string{r + "gw/internal/store"}},
		{ImportPath: r + "gw/internal/storetest", Name: "storetest", Imports: []string{r + "gw/internal/store"}},
		{ImportPath: r + "contract", Name: "contract"},
		{ImportPath: r + "other/internal/x", Name: "x"},
	}
}

func TestBuild(t *testing.T) {
	g, err := Build(testPackages(), "gw")
	if err != nil {
		t.Fatal(err)
	}
	wantNodes := []string{"contract", "gw/cmd/gw", "gw/internal/app", "gw/internal/door", "gw/internal/store"}
	if !slices.Equal(g.Nodes, wantNodes) {
		t.Errorf("nodes %v, want %v (commands' closure only: no test helper, no unreachable plugin)", g.Nodes, wantNodes)
	}
	tests := []struct {
		from string
		want []string
	}{
		{"gw/cmd/gw", []string{"gw/internal/app"}},
		// app -> store and app -> contract are implied by app -> door -> store -> contract.
		{"gw/internal/app", []string{"gw/internal/door"}},
		{"gw/internal/door", []string{"gw/internal/store"}},
		{"gw/internal/store", []string{"contract"}},
		{"contract", nil},
	}
	for _, tt := range tests {
		t.Run(tt.from, func(t *testing.T) {
			if got := g.Edges[tt.from]; !slices.Equal(got, tt.want) {
				t.Errorf("edges from %s: %v, want %v", tt.from, got, tt.want)
			}
		})
	}
}

func TestBuildNoCommand(t *testing.T) {
	if _, err := Build(testPackages(), "other"); err == nil {
		t.Fatal("a module without a command built a graph")
	}
}

func TestMermaid(t *testing.T) {
	pkgs := testPackages()
	pkgs[1].Imports = append(pkgs[1].Imports, Root+"gw/internal/plugins/a")
	g, err := Build(pkgs, "gw")
	if err != nil {
		t.Fatal(err)
	}
	out := Mermaid(g)
	for _, want := range []string{
		"```mermaid\ngraph LR\n",
		`gw_cmd_gw["cmd/gw"]`,
		`gw_internal_app["app"]`,
		`subgraph gw_plugins["internal/plugins"]`,
		`gw_internal_plugins_a["a"]`,
		`subgraph shared["shared modules"]`,
		"gw_internal_app --> gw_internal_door\n",
		"gw_internal_store --> contract\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("graph lacks %q:\n%s", want, out)
		}
	}
	if again := Mermaid(g); again != out {
		t.Error("rendering the same graph twice differs")
	}
}

func TestUpdate(t *testing.T) {
	graphs := map[string]string{"gw": "G\n"}
	tests := []struct {
		name, doc, want string
		wantErr         bool
	}{
		{name: "empty section", doc: "a\n<!-- importgraph:gw -->\n<!-- /importgraph:gw -->\nb\n",
			want: "a\n<!-- importgraph:gw -->\nG\n<!-- /importgraph:gw -->\nb\n"},
		{name: "stale section", doc: "<!-- importgraph:gw -->\nold\nlines\n<!-- /importgraph:gw -->",
			want: "<!-- importgraph:gw -->\nG\n<!-- /importgraph:gw -->"},
		{name: "current section", doc: "<!-- importgraph:gw -->\nG\n<!-- /importgraph:gw -->",
			want: "<!-- importgraph:gw -->\nG\n<!-- /importgraph:gw -->"},
		{name: "no markers", doc: "text", wantErr: true},
		{name: "no end", doc: "<!-- importgraph:gw -->", wantErr: true},
		{name: "twice", doc: strings.Repeat("<!-- importgraph:gw --><!-- /importgraph:gw -->", 2), wantErr: true},
		{name: "reversed", doc: "<!-- /importgraph:gw --><!-- importgraph:gw -->", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Update([]byte(tt.doc), graphs)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("no error; got %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	in := `{"ImportPath":"a","Name":"main","Imports":["b"]}
{"ImportPath":"b","Name":"b"}`
	pkgs, err := decode(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 2 || pkgs[0].Name != "main" || !slices.Equal(pkgs[0].Imports, []string{"b"}) {
		t.Errorf("decoded %+v", pkgs)
	}
	if _, err := decode(strings.NewReader(`{"ImportPath":`)); err == nil {
		t.Error("truncated input decoded without error")
	}
}

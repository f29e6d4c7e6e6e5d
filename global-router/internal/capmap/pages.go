package capmap

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"path"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/openai"
)

// ContentSecurityPolicy is sent with every answer of the map: scripts, styles and connections
// from the router's own origin only, no inline script or style, no frames, forms posting only
// back to the origin.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

//go:embed assets
var assets embed.FS

// assetTypes are the assets served under /map/assets/ and their content types; nothing else
// is.
var assetTypes = map[string]string{
	"app.js":      "text/javascript; charset=utf-8",
	"style.css":   "text/css; charset=utf-8",
	"favicon.svg": "image/svg+xml",
}

// Templates of the two pages: the map and the login form.
var (
	pageHTML  = template.Must(template.ParseFS(assets, "assets/index.html"))
	loginHTML = template.Must(template.ParseFS(assets, "assets/login.html"))
)

// secureHeaders sets the security headers of every answer.
func secureHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", ContentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		hd.Set("Cross-Origin-Resource-Policy", "same-origin")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// noRoute answers a path the map does not serve with an OpenAI-style 404 (405 for another
// method), counted.
func noRoute(mux *http.ServeMux, m *metrics) http.Handler {
	return openai.NoRoute(mux, func(_ *http.Request, status int) {
		reason := reasonNotFound
		if status == http.StatusMethodNotAllowed {
			reason = reasonMethod
		}
		m.refused.WithLabelValues(reason).Inc()
	})
}

// serveAsset serves one embedded asset.
func serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	ctype, ok := assetTypes[name]
	if !ok {
		notFound(r).Write(w)
		return
	}
	b, err := assets.ReadFile(path.Join("assets", name))
	if err != nil {
		notFound(r).Write(w)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}

// servePage serves the map to a logged-in browser and sends any other to the login form.
func (s *Server) servePage(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.session(r); !ok {
		http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
		return
	}
	render(w, http.StatusOK, pageHTML, struct{ Region string }{s.cfg.Region})
}

// serveLoginForm serves the login form.
func (s *Server) serveLoginForm(w http.ResponseWriter, _ *http.Request) {
	render(w, http.StatusOK, loginHTML, loginPage{Region: s.cfg.Region})
}

// loginPage is the login form's data: the message of a refused login, if any.
type loginPage struct {
	Region, Error string
}

// render executes t with data and writes it as HTML with status.
func render(w http.ResponseWriter, status int, t *template.Template, data any) {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		(&openai.Error{Status: http.StatusInternalServerError, Type: openai.TypeServiceUnavailable,
			Message: "capacity map: render page: " + err.Error()}).Write(w)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// notFound is the answer to a path the map does not serve.
func notFound(r *http.Request) *openai.Error {
	p := r.URL.Path
	if len(p) > 256 {
		p = p[:256] + "..."
	}
	return &openai.Error{Status: http.StatusNotFound, Type: openai.TypeInvalidRequest,
		Message: "Invalid URL (" + r.Method + " " + p + ")"}
}

// unauthenticated is the answer to a data request without a valid session.
var unauthenticated = openai.Error{Status: http.StatusUnauthorized, Type: openai.TypeInvalidRequest,
	Code:    contract.ReasonInvalidAPIKey,
	Message: "capacity map: not logged in, or the session ended; log in at " + Prefix + "login with the admin token"}

package server

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// apiError is an error answered to the client in vLLM's (OpenAI's) JSON shape:
// {"error":{"message":...,"type":...,"param":...,"code":...}}.
type apiError struct {
	status  int
	kind    string
	param   string
	message string
}

func (e *apiError) Error() string { return e.message }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, kind: "BadRequestError", param: param,
		message: fmt.Sprintf(format, args...)}
}

func notFound(model string) *apiError {
	return &apiError{status: http.StatusNotFound, kind: "NotFoundError", param: "model",
		message: fmt.Sprintf("The model `%s` does not exist.", model)}
}

func tooLarge(limit int64) *apiError {
	return &apiError{status: http.StatusRequestEntityTooLarge, kind: "RequestEntityTooLargeError",
		message: fmt.Sprintf("Request body exceeds the limit of %d bytes.", limit)}
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

func writeError(w http.ResponseWriter, e *apiError) {
	var param *string
	if e.param != "" {
		param = &e.param
	}
	body, _ := json.Marshal(errorBody{Error: errorDetail{Message: e.message, Type: e.kind, Param: param, Code: e.status}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_, _ = w.Write(body)
}

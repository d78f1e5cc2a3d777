package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/locale"
)

// apiHostname is a bound host name as the API shows it.
type apiHostname struct {
	Name string `json:"name"`
	// Managed: under the apps base domain, the platform writes its CNAME.
	Managed bool `json:"managed"`
	// State: pending, verified, wrong (resolved says what the name
	// resolves to), error (error says why the check could not tell).
	State    string `json:"state"`
	Resolved string `json:"resolved,omitempty"`
	Error    string `json:"error,omitempty"`
	// Certificate is its certificate, once the name is verified.
	Certificate *apiCertificate `json:"certificate"`
	// EdgeStatus is what the platform's Gateway says of its routes
	// through the edge: "ok", or why not ("" when none).
	EdgeStatus string `json:"edge_status,omitempty"`
}

// apiCertificate is a host name's certificate: state ready, issuing or
// error (error is cert-manager's message); not_after its expiry.
type apiCertificate struct {
	State    string     `json:"state"`
	NotAfter *time.Time `json:"not_after"`
	Error    string     `json:"error,omitempty"`
}

func apiHostnameOf(h ingress.Hostname) apiHostname {
	out := apiHostname{Name: h.Name, Managed: h.Managed, State: h.State, Resolved: h.Resolved, Error: h.Error, EdgeStatus: h.EdgeStatus}
	if h.Cert != "" {
		out.Certificate = &apiCertificate{State: h.Cert, Error: h.CertError}
		if !h.CertNotAfter.IsZero() {
			t := h.CertNotAfter.UTC()
			out.Certificate.NotAfter = &t
		}
	}
	return out
}

// apiHostnameBody is the body of POST /api/v1/clusters/{id}/hostnames.
type apiHostnameBody struct {
	Name string `json:"name"`
}

// addAPIHostname binds a host name to the cluster: 201 with it; 422 for a
// bad, reserved or taken name or too many; 409 while managed ingress is
// off or the cluster is being deleted.
func (h *Handlers) addAPIHostname(c echo.Context) error {
	cl, err := h.ownChangeableCluster(c)
	if err != nil {
		return err
	}
	var body apiHostnameBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	added, err := h.Ingress.AddHostname(c.Request().Context(), cl, body.Name, actor(c))
	ctx := c.Request().Context()
	var fe input.Errors
	switch {
	case errors.As(err, &fe):
		return h.apiClusterError(c, clusters.FieldErrors(fe))
	case errors.Is(err, ingress.ErrIngressOff):
		return c.JSON(http.StatusConflict, apiError{Error: apiErrorBody{Code: "ingress_off", Message: locale.T(ctx, err.Error())}})
	case errors.Is(err, ingress.ErrHostnameTooMany):
		return c.JSON(http.StatusUnprocessableEntity, apiError{Error: apiErrorBody{Code: "too_many", Message: locale.T(ctx, err.Error())}})
	case err != nil:
		return h.apiClusterError(c, err)
	}
	c.Response().Header().Set(echo.HeaderLocation, fmt.Sprintf("/api/v1/clusters/%d/hostnames/%s", cl.ID, added.Name))
	return c.JSON(http.StatusCreated, apiHostnameOf(added))
}

// removeAPIHostname unbinds a host name of the cluster: 204; 404 for a
// name not bound to it.
func (h *Handlers) removeAPIHostname(c echo.Context) error {
	cl, err := h.ownChangeableCluster(c)
	if err != nil {
		return err
	}
	err = h.Ingress.RemoveHostname(c.Request().Context(), cl, c.Param("name"), actor(c))
	if errors.Is(err, ingress.ErrHostnameNotFound) {
		return c.JSON(http.StatusNotFound, apiError{Error: apiErrorBody{Code: "not_found", Message: locale.T(c.Request().Context(), err.Error())}})
	}
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

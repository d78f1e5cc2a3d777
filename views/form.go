package views

import "github.com/a-h/templ"

// Form is a submitted form as a page shows it again: the values the user
// typed and, per field, the catalog ID of what is wrong with it.
type Form struct {
	Values map[string]string
	Errors map[string]string
	// Error is a message about the whole form, shown above it, with the
	// values its text refers to.
	Error     string
	ErrorData map[string]any
}

// NewForm returns an empty form.
func NewForm() Form { return Form{Values: map[string]string{}, Errors: map[string]string{}} }

// Value is the submitted value of a field.
func (f Form) Value(name string) string { return f.Values[name] }

// Err is the message ID of a field's error, or "".
func (f Form) Err(name string) string { return f.Errors[name] }

// invalid marks a control whose value was refused (aria-invalid="true", which
// Pico draws in red and screen readers announce); a valid one gets no
// attribute, since an empty aria-invalid reads as "false".
func invalid(refused bool) templ.Attributes {
	if refused {
		return templ.Attributes{"aria-invalid": "true"}
	}
	return nil
}

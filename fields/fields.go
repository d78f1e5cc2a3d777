// Package fields is the error a form's input gets: what is wrong with each
// field, as catalog message IDs, for the handlers to show next to it.
package fields

import "fmt"

// Errors maps field names to message IDs. The domain packages name it
// FieldErrors (an alias, so one errors.As finds any of them).
type Errors map[string]string

func (f Errors) Error() string { return fmt.Sprintf("invalid fields: %v", map[string]string(f)) }

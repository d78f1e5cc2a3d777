package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Output formats of the listing and get commands (-o).
const (
	outputTable = "table"
	outputJSON  = "json"
)

// checkOutput is a usage error for an unknown -o.
func checkOutput(format string) error {
	if format != outputTable && format != outputJSON {
		return usageErrorf("unknown output format %q: use table or json", format)
	}
	return nil
}

// printJSON writes v indented, as the API's objects.
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("print JSON: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// printTable writes a header and rows in aligned columns, as kubectl does.
func printTable(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, row := range rows {
		for i, cell := range row {
			if cell == "" {
				row[i] = "-" // an empty cell would shift the columns to the eye
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// age is how long ago t was, in kubectl's short form (90s, 5m, 3h, 12d).
func age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case t.IsZero():
		return ""
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

var clusterHeader = []string{"NAME", "STATUS", "VERSION", "BACKEND", "ACCESS", "ENDPOINT", "AGE"}

func clusterRow(now time.Time, c Cluster) []string {
	return []string{c.Name, c.Status, c.KubernetesVersion, c.Backend, c.PublicAccessMode, c.Endpoint, age(now, c.CreatedAt)}
}

var nodeHeader = []string{"NAME", "STATUS", "ROLES", "VERSION", "INTERNAL-IP", "OS/ARCH", "AGE"}

func nodeRow(now time.Time, n Node) []string {
	status := n.Status
	if n.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return []string{n.Name, status, strings.Join(n.Roles, ","), n.KubeletVersion, n.InternalIP, n.OS + "/" + n.Arch, age(now, n.CreatedAt)}
}

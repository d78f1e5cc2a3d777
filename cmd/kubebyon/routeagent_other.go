//go:build !linux

package main

import "fmt"

// routeAgent refuses to run: the route agent writes the host's routes with
// netlink, which only Linux has.
func (c *cli) routeAgent([]string) error {
	fmt.Fprintln(c.stderr, "kubebyon route-agent runs only on Linux: it keeps the host's routes with netlink")
	return errUsage
}

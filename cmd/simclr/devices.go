package main

import "github.com/spf13/cobra"

// Stub: replaced by the owner of this command.
func newDevicesCmd() *cobra.Command {
	return &cobra.Command{Use: "devices", Short: "(not yet implemented)"}
}

package main

import "github.com/spf13/cobra"

// Stub: replaced by the owner of this command.
func newTrainCmd() *cobra.Command {
	return &cobra.Command{Use: "train", Short: "(not yet implemented)"}
}

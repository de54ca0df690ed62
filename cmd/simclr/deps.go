package main

import (
	_ "github.com/disintegration/imaging"
	_ "github.com/ebitengine/purego"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "gonum.org/v1/plot"
)

func main() {}

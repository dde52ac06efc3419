package apicheck

import (
	"io"
	"os"
)

func openFile(name string) (io.ReadCloser, error) { return os.Open(name) }

module loopsim.example/gohttp

go 1.19

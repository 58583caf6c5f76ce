"""Where two ports part ways: `weanj fuzz`'s draws and search, and the minimal case it
and `weanj bisect` write."""

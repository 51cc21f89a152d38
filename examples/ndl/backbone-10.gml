# A made-up ten-city research backbone (not real data), in the GML style of
# the Internet Topology Zoo: a ring with two chords. Latencies are one-way.
graph [
  directed 0
  label "backbone-10"
  node [ id 0 label "Seattle" ]
  node [ id 1 label "Portland" ]
  node [ id 2 label "Sacramento" ]
  node [ id 3 label "Los Angeles" ]
  node [ id 4 label "Phoenix" ]
  node [ id 5 label "Denver" ]
  node [ id 6 label "Kansas City" ]
  node [ id 7 label "Chicago" ]
  node [ id 8 label "Minneapolis" ]
  node [ id 9 label "Boise" ]
  edge [ source 0 target 1 LinkSpeed "10" LinkSpeedUnits "G" latency "3 ms" ]
  edge [ source 1 target 2 LinkSpeed "10" LinkSpeedUnits "G" latency "6 ms" ]
  edge [ source 2 target 3 LinkSpeed "10" LinkSpeedUnits "G" latency "5 ms" ]
  edge [ source 3 target 4 bandwidth "1 Gbit" latency "4 ms" ]
  edge [ source 4 target 5 bandwidth "1 Gbit" latency "7 ms" ]
  edge [ source 5 target 6 bandwidth "1 Gbit" latency "5 ms" ]
  edge [ source 6 target 7 bandwidth "1 Gbit" latency "5 ms" ]
  edge [ source 7 target 8 bandwidth "1 Gbit" latency "4 ms" ]
  edge [ source 8 target 9 bandwidth "1 Gbit" latency "11 ms" ]
  edge [ source 9 target 0 bandwidth "1 Gbit" latency "6 ms" ]
  edge [ source 9 target 5 LinkSpeedRaw 2500000000 latency "7 ms" ]
  edge [ source 2 target 5 LinkSpeedRaw 2500000000 latency "9 ms" ]
]

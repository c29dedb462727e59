"""What both live shells (the daemon, the Flux scheduler module) need between the RJMS and the core:
the snapshot builder, the variation predictor wiring and the decision journal."""

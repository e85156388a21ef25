"""Judge-corrected estimates of a mean from a judge plus a few human labels (DESIGN "Estimates")."""

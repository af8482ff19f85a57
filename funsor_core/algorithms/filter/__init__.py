"""Forward filtering with a window of exact discrete states (``windowed``), its moment-matching
steps run on arrays (``fused``) and as one compiled scan (``fused_scan``)."""

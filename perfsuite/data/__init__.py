"""Synthetic datasets: recipes, image generation, JPEG datasets, TFRecord shards, atomic builds."""

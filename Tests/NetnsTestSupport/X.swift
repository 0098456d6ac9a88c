public enum X {}

/// The release: what `--version` prints and what scripts/make_deb.sh names the package (it
/// reads the line below), so the two never disagree.
public enum FramedumpVersion {
    public static let number = "0.5.0"
}

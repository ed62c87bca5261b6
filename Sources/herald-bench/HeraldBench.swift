@main
struct HeraldBench {
    static func main() {}
}

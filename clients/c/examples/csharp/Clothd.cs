// P/Invoke declarations for libclothd: the pattern a Unity or .NET game
// server uses to call the C client. Each struct mirrors one of
// clients/c/include/clothd/client.h field by field, in order (C's layout
// rules and the marshaller's sequential layout agree for these types;
// C's bool is one byte: UnmanagedType.U1). Only what Example.cs uses is
// declared; every other function follows the same shape. The library is
// found as "clothd": libclothd.so on Linux (LD_LIBRARY_PATH or the system
// path), clothd.dll on Windows, libclothd.dylib on macOS.
using System;
using System.Runtime.InteropServices;

namespace Clothd
{
    public enum Code : int
    {
        Ok = 0, ParseError = 1, UnknownCommand = 2, InvalidArgument = 3, NotFound = 4, LimitExceeded = 5,
        LineTooLong = 6, Internal = 7, Unauthorized = 8,
        Io = 100, Closed = 101, Timeout = 102, Protocol = 103, NoMem = 104, Usage = 105, Unknown = 106,
        Incompatible = 107,
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct Instance { public uint Id; }

    [StructLayout(LayoutKind.Sequential)]
    public struct OptF
    {
        [MarshalAs(UnmanagedType.U1)] public bool Set;
        public float Value;
        public static OptF Of(float v) { return new OptF { Set = true, Value = v }; }
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct OptI
    {
        [MarshalAs(UnmanagedType.U1)] public bool Set;
        public int Value;
        public static OptI Of(int v) { return new OptI { Set = true, Value = v }; }
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct OptU
    {
        [MarshalAs(UnmanagedType.U1)] public bool Set;
        public uint Value;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct OptB
    {
        [MarshalAs(UnmanagedType.U1)] public bool Set;
        [MarshalAs(UnmanagedType.U1)] public bool Value;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct OptV3
    {
        [MarshalAs(UnmanagedType.U1)] public bool Set;
        public float X, Y, Z;
        public static OptV3 Of(float x, float y, float z) { return new OptV3 { Set = true, X = x, Y = y, Z = z }; }
    }

    [StructLayout(LayoutKind.Sequential, CharSet = CharSet.Ansi)]
    public struct Error
    {
        public Code Code;
        [MarshalAs(UnmanagedType.U1)] public bool Reconnecting;
        [MarshalAs(UnmanagedType.ByValTStr, SizeConst = 32)] public string WireCode;
        [MarshalAs(UnmanagedType.ByValTStr, SizeConst = 512)] public string Message;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct Options
    {
        [MarshalAs(UnmanagedType.LPStr)] public string Host;
        public ushort Port;
        [MarshalAs(UnmanagedType.LPStr)] public string Token;
        [MarshalAs(UnmanagedType.U1)] public bool TokenFromEnv;
        public int TimeoutMs;
        [MarshalAs(UnmanagedType.U1)] public bool Reconnect;
        public int ReconnectTimeoutMs;
        public int Rcvbuf;
        public UIntPtr MaxMessage;
        public IntPtr OnFrame, OnEvent, User, OnWarning;
        [MarshalAs(UnmanagedType.U1)] public bool Strict;
        public IntPtr Require;       // const char *const *: features the server's hello must list
        public UIntPtr RequireCount;
        [MarshalAs(UnmanagedType.U1)] public bool NoHello;
        [MarshalAs(UnmanagedType.LPStr)] public string UnixPath; // null: TCP; else `clothd --unix PATH`'s socket
    }

    // clothd_paint: a painted per-vertex property (mode 0 unset, 1 all, 2 each, 3 clear).
    [StructLayout(LayoutKind.Sequential)]
    public struct Paint
    {
        public int Mode;
        public float Value;
        public IntPtr Values;          // float*, pinned by the caller for the call
        public UIntPtr Count;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct Material
    {
        public OptF Mass, Stiffness, BendStiffness, Damping;
        public OptI SolverIterations;
        public OptV3 Gravity;
        public OptF StretchCompliance, BendCompliance;
        public OptI Iterations, Substeps;
        public OptF SolverFrequency, VelocityRetention, Thickness, ParticleMass;
        public int WindModel; // 0 unset, 1 aero, 2 constant, 3 dragLift
        public OptF AirDensity, Drag, Lift;
        public OptB Tethers;
        public OptF TetherScale, SleepThreshold, SelfDistance, VolumeStiffness, VolumeCompliance;
        public OptI Lod;
        public OptF Priority;
        public OptF LinearInertia, AngularInertia, TearStrain;
        public Paint InvMassScale, MaxDistance, BackstopDistance, BackstopRadius;
        public Paint StretchComplianceScale, BendComplianceScale;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct ClothOptions
    {
        public OptI Width, Height;
        public OptF Spacing;
        public OptV3 Origin, Right, Down;
        public Material Material;
        [MarshalAs(UnmanagedType.LPStr)] public string Scene;   // null: "default"
        [MarshalAs(UnmanagedType.U1)] public bool Ephemeral;    // destroyed when this connection closes
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct Created { public Instance Instance; public uint Particles, Constraints; }

    [StructLayout(LayoutKind.Sequential)]
    public struct PinOptions
    {
        public OptU Particle;
        public OptV3 Position;
        public IntPtr Particles;       // uint32_t*, pinned by the caller for the call
        public UIntPtr ParticleCount;
        public IntPtr Positions;       // float*, or zero
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct StepOptions
    {
        public OptF Dt;
        public Instance Instance;
        public IntPtr Instances;
        public UIntPtr InstanceCount;
        public OptF BudgetMs;
        [MarshalAs(UnmanagedType.LPStr)] public string Scene;   // null, and no instances: every instance
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct GetOptions
    {
        public IntPtr Positions;
        public UIntPtr Capacity;
        [MarshalAs(UnmanagedType.U1)] public bool Velocities;
        [MarshalAs(UnmanagedType.U1)] public bool Normals;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct InstanceState
    {
        public Instance Instance;
        public int Kind;
        public uint Width, Height;
        public ulong Frame;
        public double Time;
        [MarshalAs(UnmanagedType.U1)] public bool Enabled;
        [MarshalAs(UnmanagedType.U1)] public bool Unstable;
        [MarshalAs(UnmanagedType.U1)] public bool Sleeping;
        public int WindModel;
        public float WindX, WindY, WindZ, GravityX, GravityY, GravityZ;
        public IntPtr Positions;
        public UIntPtr ParticleCount;
        public IntPtr Pinned;
        public UIntPtr PinnedCount;
        public IntPtr Colliders;
        public UIntPtr ColliderCount;
        [MarshalAs(UnmanagedType.U1)] public bool HasSelfCollision;
        public ulong SelfSearches, SelfPairs, SelfOverflows;
        [MarshalAs(UnmanagedType.U1)] public bool PositionsOwned;
        public IntPtr Velocities;
        public IntPtr Normals;
        public uint Lod, CurrentLod;
        [MarshalAs(UnmanagedType.U1)] public bool LodDegraded;
        public float Priority;
    }

    public static class Native
    {
        const string Lib = "clothd";

        [DllImport(Lib)] public static extern Code clothd_connect(ref Options o, out IntPtr client, out Error err);
        [DllImport(Lib)] public static extern void clothd_close(IntPtr client);
        [DllImport(Lib)] public static extern Code clothd_create_cloth(IntPtr c, ref ClothOptions o, out Created created, out Error err);
        [DllImport(Lib)] public static extern Code clothd_pin(IntPtr c, Instance inst, ref PinOptions o, out uint pinned, out Error err);
        [DllImport(Lib)] public static extern Code clothd_step(IntPtr c, ref StepOptions o, IntPtr result, out Error err);
        [DllImport(Lib)] public static extern Code clothd_get(IntPtr c, Instance inst, ref GetOptions o, out InstanceState state, out Error err);
        [DllImport(Lib)] public static extern void clothd_instance_state_free(ref InstanceState state);
        [DllImport(Lib)] public static extern Code clothd_destroy(IntPtr c, Instance inst, out Error err);
    }

    // What a call's failure raises: the wire's code and message.
    public class ClothdException : Exception
    {
        public readonly Code Code;
        public ClothdException(Error e) : base(e.WireCode.Length > 0 ? e.WireCode + ": " + e.Message : e.Code + ": " + e.Message) { Code = e.Code; }
        public static void Check(Code rc, Error e) { if (rc != Code.Ok) throw new ClothdException(e); }
    }
}
